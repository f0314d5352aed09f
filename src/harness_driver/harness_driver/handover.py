"""The driver's hand-over rules (the learned half): once a task handed to a policy (strategy A
or C) has had its policy run, the model has `post_policy_calls` more model calls, each turn
saying how many are left; when they are used up the policy runs to the episode's end (the
kernel's policy-to-end hook), and if the episode still runs the driver finishes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness_types.cell import CellResult


@dataclass
class HandOver:
    post_policy_calls: int
    strategy: str = ''  # A, B or C once start() chose it
    kind: str = ''
    policy_runs: int = 0
    calls_left: int | None = None  # None until a handed-over task's policy has run

    def after_cell(self, cell: CellResult) -> None:
        """Take the strategy and the policy runs from a cell's result."""
        if cell.strategy:
            self.strategy, self.kind = cell.strategy, cell.strategy_kind
        # runs that reached the policy (a refused or unreachable run hands nothing over)
        ran = sum(1 for e in cell.executions if e.skill == 'run_policy' and (e.chunks or 0) > 0)
        self.policy_runs += ran
        if ran and self.strategy in ('A', 'C') and self.calls_left is None:
            self.calls_left = self.post_policy_calls

    def used_call(self) -> None:
        if self.calls_left is not None:
            self.calls_left = max(0, self.calls_left - 1)

    @property
    def policy_to_end_due(self) -> bool:
        """The post-policy calls are used up: run the policy to the end before another call."""
        return self.calls_left == 0

    def note(self) -> str:
        """The turn report's line ('' before the countdown starts)."""
        if self.calls_left is None:
            return ''
        return (
            f'Post-policy model calls left: {self.calls_left} (strategy {self.strategy}); '
            'when they are used up the policy runs to the end of the episode and the harness '
            'finishes it.'
        )

    def summary(self) -> dict:
        """summary.json's `strategy` for an episode with policies."""
        return {
            'choice': self.strategy or None,
            'kind': self.kind or None,
            'policy_runs': self.policy_runs,
            'post_policy_calls_left': self.calls_left,
        }
