"""What the operator's calls cost: each failure class's budget spent, or the call refused with a
ticket (opened, journaled and logged the moment a budget runs out). A call refused by one
class spends nothing of another."""

from __future__ import annotations

from collections.abc import Callable

from harness_recording.run_folder import RunFolder

from harness_operator.actions import Action, same_action
from harness_operator.budgets import BudgetRefusedError
from harness_operator.journal import Journal


class Charges:
    """Spends `journal`'s budgets; tickets go to the journal, the run's events and `log`."""

    def __init__(self, journal: Journal, run: RunFolder, log: Callable[[str], None]) -> None:
        self.journal = journal
        self.run = run
        self.log = log

    def refuse_if_spent(self, failure_class: str, reason: str) -> None:
        """BudgetRefusedError when the class has no budget left (an exhausted budget opens a
        ticket now)."""
        budgets = self.journal.budgets
        ticket = budgets.decide(failure_class, reason)
        if ticket is None:
            return
        if ticket not in budgets.tickets:  # a new one: the budget ran out now
            self.journal.write({'type': 'ticket', 'ticket': ticket.as_dict()})
            self.run.event({'type': 'ticket', **ticket.as_dict()})
            self.log(f'ticket {ticket.id} opened: {failure_class} budget exhausted ({reason})')
        raise BudgetRefusedError(ticket)

    def charge(self, failure_class: str, reason: str) -> None:
        """Spend one of the class's budget, or refuse."""
        self.refuse_if_spent(failure_class, reason)
        self.journal.write({'type': 'charge', 'failure_class': failure_class})

    def classes_for(self, action: Action, executor: str) -> list[tuple[str, str]]:
        """The failure classes (with why) running `action` with `executor` falls in: an
        action run before (the same action, by the journal's trials) with another executor is
        an executor switch; one that did not succeed before is a retry."""
        same = [t for t in self.journal.state.trials.values() if same_action(t.action, action)]
        classes = []
        if any(t.executor != executor for t in same):
            classes.append(('executor_switch', f'{action.describe()} with {executor}'))
        if any(not t.ok for t in same):
            classes.append(('retry', f'{action.describe()} again after it did not succeed'))
        return classes

    def for_action(self, action: Action, executor: str) -> None:
        """Every class the call falls in (classes_for) is decided first, then spent."""
        classes = self.classes_for(action, executor)
        for failure_class, reason in classes:
            self.refuse_if_spent(failure_class, reason)
        for failure_class, _ in classes:
            self.journal.write({'type': 'charge', 'failure_class': failure_class})
