"""Budgets per failure class, which the agent cannot raise, and the tickets that exhausting one
opens. The classes are the ways agents fail: looking again without anything having moved
(`reobserve`), repeating an action that did not succeed (`retry`), running the same action
with another executor (`executor_switch`), taking an action back (`undo`) and stopping for the
owner to refill the station (`refill_pause`). Only the station's owner resolves a ticket
(`harness tickets`), which grants that class its budget afresh. Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass

FAILURE_CLASSES = ('reobserve', 'retry', 'executor_switch', 'undo', 'refill_pause')


@dataclass
class Ticket:
    """`id` (T1, T2, ...), the `failure_class` whose budget ran out, `reason` (the refused
    call), `status` open or resolved, and the owner's `resolution` note."""

    id: str
    failure_class: str
    reason: str
    status: str = 'open'
    resolution: str = ''

    def as_dict(self) -> dict:
        return asdict(self)


class BudgetRefusedError(RuntimeError):
    """The call's failure class has no budget left (or an open ticket): nothing moved."""

    def __init__(self, ticket: Ticket) -> None:
        super().__init__(
            f'the {ticket.failure_class} budget is exhausted: ticket {ticket.id} is open '
            f"({ticket.reason}); the station's owner resolves it with `harness tickets "
            f'--resolve {ticket.id}`'
        )
        self.ticket = ticket


class OperatorBudgets:
    """`limits` per failure class (configuration); `used` counts since the last resolution."""

    def __init__(self, limits: dict[str, int]) -> None:
        unknown = set(limits) - set(FAILURE_CLASSES)
        if unknown:
            raise ValueError(f'unknown failure classes {sorted(unknown)}; known: {FAILURE_CLASSES}')
        self.limits = {c: int(limits.get(c, 0)) for c in FAILURE_CLASSES}
        self.used = dict.fromkeys(FAILURE_CLASSES, 0)
        self.tickets: list[Ticket] = []

    def left(self) -> dict[str, int]:
        return {c: max(0, self.limits[c] - self.used[c]) for c in FAILURE_CLASSES}

    def open_ticket(self, failure_class: str) -> Ticket | None:
        return next(
            (t for t in self.tickets if t.failure_class == failure_class and t.status == 'open'),
            None,
        )

    def decide(self, failure_class: str, reason: str) -> Ticket | None:
        """Whether one more call of the class may run: None (spend() it), or the ticket that
        refuses it (the open one, or a new one to add() when the budget is spent)."""
        ticket = self.open_ticket(failure_class)
        if ticket is not None:
            return ticket
        if self.used[failure_class] >= self.limits[failure_class]:
            return Ticket(f'T{len(self.tickets) + 1}', failure_class, reason)
        return None

    def spend(self, failure_class: str) -> None:
        self.used[failure_class] += 1

    def add(self, ticket: Ticket) -> None:
        if all(t.id != ticket.id for t in self.tickets):
            self.tickets.append(ticket)

    def resolve(self, ticket_id: str, note: str) -> Ticket:
        """The owner's resolution: the ticket closes and its class's budget starts again."""
        for t in self.tickets:
            if t.id == ticket_id:
                if t.status != 'open':
                    raise ValueError(f'ticket {ticket_id} is already resolved')
                t.status, t.resolution = 'resolved', note
                self.used[t.failure_class] = 0
                return t
        known = ', '.join(t.id for t in self.tickets) or 'none'
        raise ValueError(f'no ticket {ticket_id!r}; tickets: {known}')
