"""The run journal: one JSON object per line, appended, that outlives the MCP session. It holds
the goal (task, layout, seed, instruction), every trial by its key, the budgets spent, the
tickets and their resolutions, and the session's notable events (an emergency stop). A new
session reads it back (`JournalState`) and resumes: keys stay idempotent, budgets stay spent,
open tickets stay open. The owner's `harness tickets --resolve` appends to the same file while a
server runs; the server reads what was appended before each call (`refresh`). Pure."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness_types.whole_file import open_regular

from harness_operator.budgets import FAILURE_CLASSES, OperatorBudgets, Ticket
from harness_operator.trial import TrialRecord


class JournalError(ValueError):
    """The journal cannot be used (unreadable, or for another goal); the message says why."""


@dataclass
class JournalState:
    goal: dict | None = None
    trials: dict[str, TrialRecord] = field(default_factory=dict)  # by key, in order
    events: list[dict] = field(default_factory=list)
    sessions: int = 0
    dispatched: dict[str, str] = field(default_factory=dict)  # key -> trial id, before it ran
    # skill -> {executor, policy_version}: "prefer executor X for skill Y", with the version of
    # the policy it was set for (a later version leaves it unverified)
    preferences: dict[str, dict] = field(default_factory=dict)

    def estop_engaged(self) -> bool:
        """The last emergency-stop event engaged it (it outlives the session that did)."""
        stops = [e['what'] for e in self.events if e.get('what', '').startswith('estop')]
        return bool(stops) and stops[-1] == 'estop'

    def finished(self) -> bool:
        """An earlier session finished the run."""
        return any(e.get('what') == 'finish' for e in self.events)


class Journal:
    """`Journal(path, budgets)`: reads what the file holds into `state` and `budgets`; `write`
    appends a record and applies it. The journal is the only writer of both: what is in
    memory is what a new session reads back."""

    def __init__(self, path: Path, budgets: OperatorBudgets) -> None:
        self.path = Path(path)
        self.budgets = budgets
        self.state = JournalState()
        self._offset = 0
        self._lock = threading.RLock()  # the MCP tools run in threads of their own
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # (made, not touched: listing tickets changes nothing)
            self.path.touch()
        self.refresh()

    def refresh(self) -> list[dict]:
        """Apply the records appended since the last read (by this or another process)."""
        with self._lock:
            try:
                with open(self.path, 'rb') as f:
                    f.seek(self._offset)
                    data = f.read()
            except OSError as exc:
                raise JournalError(f'the journal {self.path} cannot be read: {exc}') from None
            records = []
            # line by line, the offset moving past each applied line: a failure applies
            # nothing twice; a last line still being written waits for the next read
            for line in data.splitlines(keepends=True):
                if not line.endswith(b'\n'):
                    break
                if line.strip():
                    record = self._parsed(line)
                    try:
                        self._apply(record)
                    except (KeyError, TypeError, ValueError, AttributeError) as exc:
                        raise JournalError(
                            f'the journal {self.path} has a record that does not fit at byte '
                            f'{self._offset}: {type(exc).__name__}: {exc}'
                        ) from None
                    records.append(record)
                self._offset += len(line)
            return records

    def _parsed(self, line: bytes) -> dict:
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get('type'), str):
                raise ValueError('not a record (an object with a "type")')
        except (ValueError, RecursionError) as exc:  # (nested past the parser)
            raise JournalError(
                f'the journal {self.path} has a malformed line at byte {self._offset}: {exc}'
            ) from None
        return record

    def _apply(self, r: dict) -> None:
        s, kind = self.state, r['type']
        if kind == 'goal':
            s.goal = {k: v for k, v in r.items() if k not in ('type', 'time')}
        elif kind == 'session':
            s.sessions += 1
        elif kind == 'trial':
            record = TrialRecord.of(r['record'])
            s.trials[record.key] = record
        elif kind == 'charge':
            if r['failure_class'] not in self.budgets.used:
                raise ValueError(f'unknown failure class {r["failure_class"]!r}')
            self.budgets.spend(r['failure_class'])
        elif kind == 'ticket':
            ticket = Ticket(**r['ticket'])
            if not all(isinstance(v, str) for v in ticket.as_dict().values()):
                raise TypeError(f'a ticket of text fields expected, not {ticket!r:.200}')
            if ticket.failure_class not in FAILURE_CLASSES:  # (its resolution would grant none)
                raise ValueError(f'a ticket of unknown failure class {ticket.failure_class!r:.80}')
            self.budgets.add(ticket)
        elif kind == 'resolved':
            # resolved twice (two owners at once): the first one counts
            with contextlib.suppress(ValueError):
                self.budgets.resolve(r['id'], r.get('note', ''))
        elif kind == 'dispatch':
            s.dispatched[r['key']] = r['trial_id']
        elif kind == 'event':
            s.events.append({k: v for k, v in r.items() if k != 'type'})
        elif kind == 'preference':
            s.preferences[str(r['skill'])] = {
                'executor': str(r['executor']),
                'policy_version': r.get('policy_version'),
            }

    def write(self, record: dict) -> None:
        """Append `record` (a dict with 'type') under an exclusive lock, then read it back."""
        line = json.dumps({**record, 'time': round(time.time(), 3)}, default=str) + '\n'
        with self._lock, open(self.path, 'a+b') as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.seek(0)
                data = f.read()
                if data and not data.endswith(b'\n'):
                    # every writer holds this lock: a last line without its end was cut off by
                    # a crash; it is dropped (it could not be read) and the drop journaled
                    cut = data.rfind(b'\n') + 1
                    f.truncate(cut)
                    dropped = {'type': 'event', 'what': 'dropped_cut_off_line'}
                    line = json.dumps(dropped | {'bytes': len(data) - cut}) + '\n' + line
                f.seek(0, 2)
                f.write(line.encode())
                f.flush()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        self.refresh()

    def hold(self, claim: IO | None = None) -> None:
        """Hold the journal for this server's lifetime (`claim`: Journal.claim's, made now
        when None)."""
        self._holder = claim if claim is not None else self.claim(self.path)

    @staticmethod
    def claim(path: Path) -> IO:
        """The claim on the journal at `path` (its lock file, held while open; JournalError
        when another holds it): two servers on one journal would give out the same trial ids
        and tickets, and a server's `--new` would move the journal of one that runs."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        holder = lock_file(path, '.lock')
        try:
            fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder.close()
            raise JournalError(
                f'another harness mcp serves the journal {path}: stop it, or use another --journal'
            ) from None
        return holder

    def check_goal(self, goal: dict) -> None:
        """JournalError unless the journal is new or for the same task, layout, seed and scene
        randomisation."""
        old = self.state.goal
        if old is None:
            return
        keys = ('task', 'layout', 'seed', 'randomize')
        mine = {k: old.get(k) for k in keys if k in old or k in goal}
        asked = {k: goal.get(k) for k in keys if k in old or k in goal}
        if mine != asked:
            raise JournalError(
                f'the journal {self.path} is for {mine}, not {asked}: resume that run, or '
                'start a new one with another --journal (or --new)'
            )


def lock_file(journal: Path, suffix: str) -> IO:
    """The lock file beside `journal` (its name plus `suffix`), opened for a lock: made when
    missing, never truncated, and never through a link (one planted there would have the lock's
    open empty the file it points at); JournalError when it cannot be."""
    lock = journal.with_name(journal.name + suffix)
    try:
        fd = open_regular(lock, os.O_WRONLY | os.O_CREAT, follow=False)
    except OSError as exc:
        what = 'a link' if lock.is_symlink() else exc.strerror or type(exc).__name__
        raise JournalError(
            f"the journal's lock file {lock} cannot be used ({what}): it must be a plain file "
            'or absent'
        ) from None
    return os.fdopen(fd, 'w')


def resolve_ticket(path: Path, ticket_id: str, note: str) -> Ticket:
    """The owner's resolution, from outside the server: checked against the journal's tickets,
    appended to it; the running server grants the budget at its next call. Read, checked and
    written under a lock of its own: of two owners resolving one ticket at once, the second
    is told the first did (both had written, and the second's note was dropped on reading)."""
    with lock_file(Path(path), '.resolving') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        journal = Journal(path, OperatorBudgets({}))
        ticket = next((t for t in journal.budgets.tickets if t.id == ticket_id), None)
        if ticket is None:
            known = ', '.join(t.id for t in journal.budgets.tickets) or 'none'
            raise JournalError(f'{path} has no ticket {ticket_id!r}; tickets: {known}')
        if ticket.status != 'open':
            raise JournalError(f'ticket {ticket_id} is already resolved: {ticket.resolution!r}')
        journal.write({'type': 'resolved', 'id': ticket_id, 'note': note})
    return ticket
