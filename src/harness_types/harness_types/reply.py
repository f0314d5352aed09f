"""A model turn's vocabulary: why the model is asked (`REASONS`, what the summary and the bench
tables count) and what one reply holds (an optional thought, then exactly one block), parsed.
Shared by the model loop (harness_driver) and the reports that show the replies
(harness_recording)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Why the model is asked for a reply (a decision's reason).
REASONS = ('start', 'escalation', 'error', 'program_end', 'verify', 'format', 'action')
BLOCKS = ('python', 'verify', 'finish')  # the harness's rung (programs)
ALL_BLOCKS = (*BLOCKS, 'call', 'action')  # with the lower rungs' (harness_driver.interface)
_FENCE = re.compile(r'^\s*```(?:python|py)?\s*\n(.*?)\n\s*```\s*$', re.DOTALL)

FORMAT_HELP = (
    'Reply with an optional short thought, then exactly one block: <python>a program</python>, '
    '<verify>a claim about the scene</verify> or <finish>a one-line summary</finish>.'
)


OUT_WHEN_IT_ENDED = 'still out when the episode process ended'


def requests_in_place(events: list[dict]) -> list[dict]:
    """An episode's events with each model request once, where it was sent: the driver says a
    request (`model_request_sent`) before it sends it, and writes its `model_request` event once
    it is answered or has failed; a request that never ended (the process died while it was
    out) is a `model_request` with `answered: false`."""

    def call(e: dict) -> int | None:  # (a crafted folder's call may be anything)
        return e.get('call') if type(e.get('call')) is int else None

    # (only a call's number ties a request's end to its start)
    ended = {call(e): e for e in events if e.get('type') == 'model_request'}
    ended.pop(None, None)
    sent = {call(e) for e in events if e.get('type') == 'model_request_sent'} - {None}
    unended = {'type': 'model_request', 'answered': False, 'why': OUT_WHEN_IT_ENDED}
    placed = []
    for e in events:
        if e.get('type') == 'model_request_sent':
            placed.append(ended.get(call(e)) or {**e, **unended})
        elif e.get('type') != 'model_request' or call(e) not in sent:
            placed.append(e)
    return placed


class FormatError(ValueError):
    """The reply has no valid block; the message says what is wrong with it."""


@dataclass(frozen=True)
class Reply:
    kind: str  # python | verify | finish
    body: str
    thought: str


def parse_reply(text: str, kinds: tuple[str, ...] = BLOCKS) -> Reply:
    """The reply's block (one of `kinds`), or FormatError saying what is wrong."""
    names = '|'.join(kinds)
    blocks = list(re.finditer(rf'<({names})>(.*?)</\1>', text, re.DOTALL))
    if not blocks:
        opened = re.search(rf'<({names})>', text)
        if opened:
            raise FormatError(f'<{opened.group(1)}> is never closed with </{opened.group(1)}>')
        listed = ', '.join(f'<{k}>' for k in kinds[:-1]) + f' or <{kinds[-1]}>'
        raise FormatError(f'the reply has no {listed} block')
    if len(blocks) > 1:
        kinds = ', '.join(f'<{b.group(1)}>' for b in blocks)
        raise FormatError(f'the reply has {len(blocks)} blocks ({kinds}); one block per reply')
    block = blocks[0]
    after = text[block.end() :].strip()
    if after:
        raise FormatError(f'text after the </{block.group(1)}> block: {after[:60]!r}')
    kind, body = block.group(1), block.group(2).strip('\n')
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    if kind != 'finish' and not body.strip():
        raise FormatError(f'the <{kind}> block is empty')
    return Reply(kind, body.strip() if kind != 'python' else body, text[: block.start()].strip())


def format_error_message(error: FormatError, help_text: str = FORMAT_HELP) -> str:
    """What the model is told after a reply without a valid block."""
    return f'Format error: {error}. Nothing ran. {help_text}'
