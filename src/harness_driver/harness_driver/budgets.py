"""Per-episode budgets: model calls, wall time, cost from token usage."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from harness_types.config import ConfigError, DriverConfig

from harness_driver.prices import Price


@dataclass
class Usage:
    model_calls: int = 0
    verifier_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a model without a price was used


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
            u = self.usage
            if verifier:
                u.verifier_calls += 1
            else:
                u.model_calls += 1
            u.input_tokens += input_tokens
            u.output_tokens += output_tokens
            u.cost_usd = None if cost is None or u.cost_usd is None else u.cost_usd + cost
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
