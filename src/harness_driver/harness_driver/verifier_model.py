"""The verifier model's answer to a claim (a program's verify() or a <verify> reply): YES or NO
and one sentence, from fresh camera views, within the episode's budgets and bounds."""

from __future__ import annotations

from harness_types.scene import ClaimAnswer

from harness_driver.budgets import Budgets
from harness_driver.history import History, TurnImage
from harness_driver.models import REFUSAL, Decision, ModelClient, ModelError, ModelRequest
from harness_driver.requests import estimate_tokens, recorded_reply

VERDICT_TOKENS = 200  # a verdict is YES or NO and one sentence
NOT_ASKED = {
    'budget_exhausted': 'the episode has no model calls left',
    'wall_time_exhausted': "the episode's wall time is spent",
    'cost_exhausted': 'the cost budget would be passed',
}


def ask_verifier(
    claim: str,
    verifier: ModelClient,
    prompt: str,
    images: list[TurnImage],
    budgets: Budgets,
    elapsed_s: float,
    bounds: list[tuple[float | None, str, bool]],
) -> tuple[ClaimAnswer, dict]:
    """The verifier's verdict on `claim` shown `images`, and the tokens it cost (with its
    reply). Not asked when the episode's budgets would be passed. `bounds` are (deadline,
    what it is, hard): no attempt starts after the earliest, and the earliest hard one cuts a
    verdict in flight (the wall budget, not hard, lets a started one finish, as for the
    model)."""
    history = History(keep_images=1, max_history_turns=0)
    history.start(f'Claim: {claim}\nAnswer YES or NO, then one sentence.', images)
    messages, _ = history.messages()
    worst = budgets.worst_case_cost(
        verifier.name, estimate_tokens(prompt, messages), VERDICT_TOKENS
    )
    stop = budgets.stop_reason(elapsed_s, worst)
    if stop is not None:
        return ClaimAnswer(False, False, f'the verifier was not asked: {NOT_ASKED[stop]}'), {}
    given = [(at, what) for at, what, _ in bounds if at is not None]
    hard = [(at, what) for at, what, is_hard in bounds if at is not None and is_hard]
    # The earliest bound stops the retries; the earliest hard one cuts a verdict in flight,
    # even where a soft one came first (a verify() late in the episode waits no longer).
    deadline, deadline_for = min(given, key=lambda b: b[0], default=(None, ''))
    cut, cut_for = min(hard, key=lambda b: b[0], default=(None, ''))
    request = ModelRequest(
        prompt,
        messages,
        VERDICT_TOKENS,
        Decision('verify', 0),
        deadline,
        deadline_for or "the episode's wall budget",
        cut,
        cut_for,
    )
    try:
        reply = verifier.complete(request)
    except ModelError as exc:  # asked, and not answered (its event says so: `asked`)
        return ClaimAnswer(False, False, str(exc)), {'asked': True}
    cost = budgets.add(verifier.name, reply.input_tokens, reply.output_tokens, True)
    tokens = {
        'input_tokens': reply.input_tokens,
        'output_tokens': reply.output_tokens,
        'cost_usd': cost,
        'reply': recorded_reply(reply.text, VERDICT_TOKENS),
    }
    if reply.stop_reason == REFUSAL:
        return ClaimAnswer(False, False, f'the verifier refused to answer ({REFUSAL})'), tokens
    return parse_verdict(reply.text), tokens


def parse_verdict(text: str) -> ClaimAnswer:
    """YES/NO as the first word, then the sentence; anything else is not an answer."""
    words = text.strip().split(None, 1)
    first = words[0].strip('.,:;!*').upper() if words else ''
    rest = words[1].strip() if len(words) > 1 else ''
    if first in ('YES', 'NO'):
        return ClaimAnswer(True, first == 'YES', rest.lstrip('.,:;- '))
    return ClaimAnswer(False, False, f'the verifier did not start with YES or NO: {text[:200]!r}')
