"""Per-episode budgets: model calls, wall time, cost from token usage."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from harness_types.config import ConfigError, DriverConfig
from harness_types.reply import REASONS, requests_in_place

from harness_driver.prices import Price


@dataclass
class Usage:
    model_calls: int = 0
    verifier_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a model without a price was used


def add_call(usage: Usage, verifier: bool, tokens: tuple[int, int], cost: float | None) -> None:
    """Count one answered call of `tokens` (input, output) that cost `cost` (None: no price)."""
    if verifier:
        usage.verifier_calls += 1
    else:
        usage.model_calls += 1
    usage.input_tokens += tokens[0]
    usage.output_tokens += tokens[1]
    usage.cost_usd = None if cost is None or usage.cost_usd is None else usage.cost_usd + cost


def usage_of_events(events: list[dict]) -> dict:
    """The summary's fields of what the episode's model and verifier calls used, counted from
    its events (each `model_request` and each answered `verify` event carries its call's tokens
    and cost): for a summary that its supervisor writes, the episode process having died before
    it wrote its own. A request still out when it died (a `model_request_sent` with no
    `model_request` of its call) is counted as asked and never answered; what it cost is not
    known."""
    usage, unanswered, verifier_unanswered, characters = Usage(), 0, 0, 0
    decisions = dict.fromkeys(REASONS, 0)
    for e in requests_in_place(events):
        if e.get('type') == 'verify' and e.get('asked') and 'input_tokens' not in e:
            verifier_unanswered += 1
            continue
        if e.get('type') == 'model_request':
            if e.get('reason') in decisions:
                decisions[e['reason']] += 1
            characters += int(e.get('characters') or 0)
            if e.get('answered') is False:  # asked, and never answered
                unanswered += 1
                continue
        elif e.get('type') != 'verify' or 'input_tokens' not in e:  # (a verifier not asked)
            continue
        tokens = int(e.get('input_tokens') or 0), int(e.get('output_tokens') or 0)
        add_call(usage, e['type'] == 'verify', tokens, e.get('cost_usd'))
    return usage_fields(usage, unanswered, decisions, characters, verifier_unanswered)


def usage_fields(
    usage: Usage,
    unanswered: int,
    decisions: dict[str, int],
    characters: int,
    verifier_unanswered: int = 0,
) -> dict:
    """The summary's fields of what the calls used: `unanswered` requests (asked, never
    answered), the `decisions` that asked by reason, the `characters` sent, the verifier's
    requests asked and never answered."""
    return {
        'model_calls': usage.model_calls,
        'model_requests_unanswered': unanswered,
        'verifier_calls': usage.verifier_calls,
        'verifier_requests_unanswered': verifier_unanswered,
        'decisions': {r: decisions.get(r, 0) for r in REASONS},
        'tokens': {'input': usage.input_tokens, 'output': usage.output_tokens},
        'request_characters': characters,
        'cost_usd': None if usage.cost_usd is None else round(usage.cost_usd, 6),
    }


class Budgets:
    """Counts what an episode used and says which budget, if any, stops the next model call.
    Thread-safe: the verifier may be asked from a program while the loop waits on the cell."""

    def __init__(self, config: DriverConfig, prices: dict[str, Price]) -> None:
        self.config = config
        self.prices = prices
        self.usage = Usage()
        self._lock = threading.Lock()
        if config.max_cost_usd > 0:
            for model in {config.model, config.verifier}:
                if model not in prices:
                    raise ConfigError(
                        f'max_cost_usd is set but the price table has no price for {model!r} '
                        f'(known: {", ".join(sorted(prices))})'
                    )

    def add(
        self, model: str, input_tokens: int, output_tokens: int, verifier: bool
    ) -> float | None:
        """Count one call; returns its cost (None when the model has no price)."""
        price = self.prices.get(model)
        cost = price.cost(input_tokens, output_tokens) if price else None
        with self._lock:
            add_call(self.usage, verifier, (input_tokens, output_tokens), cost)
        return cost

    @property
    def calls_left(self) -> int:
        """Model calls the episode may still make; the verifier's count too."""
        u = self.usage
        return max(0, self.config.max_model_calls - u.model_calls - u.verifier_calls)

    def worst_case_cost(self, model: str, input_tokens: int, max_tokens: int) -> float:
        """What a call could cost at most: its input and a reply of `max_tokens` (0 when the
        model has no price: no cost cap is possible for it)."""
        price = self.prices.get(model)
        return price.cost(input_tokens, max_tokens) if price else 0.0

    def stop_reason(self, wall_seconds: float, worst_case_usd: float = 0.0) -> str | None:
        """The end status when a budget forbids the next model call (which could cost
        `worst_case_usd`), else None."""
        c, u = self.config, self.usage
        if self.calls_left <= 0:
            return 'budget_exhausted'
        if wall_seconds >= c.max_wall_seconds:
            return 'wall_time_exhausted'
        if (
            c.max_cost_usd > 0
            and u.cost_usd is not None
            and u.cost_usd + worst_case_usd > c.max_cost_usd
        ):
            return 'cost_exhausted'
        return None
