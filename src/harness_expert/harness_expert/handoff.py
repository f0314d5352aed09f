"""The hand-off between the policy's `infer` calls and the expert's script.

The script is plain sequential code (pick, then place, then home); the policy protocol is one
call per chunk. The script runs in a thread of its own and the two take turns strictly: `infer`
hands over an observation and waits for the next chunk (or the end); the script hands over a
chunk and waits for the next observation. Only one of them runs at a time, so the script's
actions depend on the observations alone (deterministic).

The script's end is final: every later turn answers it again (the same sentence), and an
exception that ended the script is raised again in the caller's thread, on that turn and every
later one, so that the policy's caller sees the failure and not a normal end.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class Cancelled(BaseException):  # not an Exception: a script must not catch it
    """Raised in the script thread when the hand-off is closed; ends the script quietly."""


@dataclass(frozen=True)
class Turn:
    """What the script hands back: a chunk of rows, or the end (`done`) with its sentence, or
    the exception that ended it (`error`, raised by `Handoff.turn`)."""

    rows: np.ndarray | None
    done: bool = False
    info: str = ''
    error: Exception | None = None


class Handoff:
    """One script run. `script(first_obs, send)` runs in its own thread; `send(rows)` returns
    the next observation; the script's return value (a sentence) ends the run; an exception
    ends it too, and `turn` raises it."""

    def __init__(self, script: Callable[[dict, Callable[[np.ndarray], dict]], str]) -> None:
        self._script = script
        self._to_script: queue.Queue[dict | None] = queue.Queue(maxsize=1)
        self._to_policy: queue.Queue[Turn] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self._end: Turn | None = None  # the script's last turn, once it is over

    @property
    def finished(self) -> bool:
        return self._end is not None

    def turn(self, obs: dict) -> Turn:
        """Hand `obs` to the script and wait for its next turn; once the script is over, its
        end again (an exception that ended it is raised)."""
        if self._end is None:
            out = self._next(obs)
            if not out.done:
                return out
            self._end = out
        if self._end.error is not None:
            raise self._end.error
        return self._end

    def _next(self, obs: dict) -> Turn:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(obs,), name='scripted_expert', daemon=True
            )
            self._thread.start()
        else:
            self._to_script.put(obs)
        return self._to_policy.get()

    def close(self) -> None:
        """Stop a script that waits for an observation that will not come."""
        if self._thread is not None and self._thread.is_alive() and self._end is None:
            self._to_script.put(None)
            self._thread.join(timeout=5.0)
        if self._end is None:
            self._end = Turn(None, True, 'the run was closed')

    def _send(self, rows: np.ndarray) -> dict:
        self._to_policy.put(Turn(rows))
        obs = self._to_script.get()
        if obs is None:
            raise Cancelled()
        return obs

    def _run(self, obs: dict) -> None:
        try:
            info = self._script(obs, self._send)
        except Cancelled:
            return
        except BaseException as exc:  # whatever stops the script, the caller must get its turn
            if not isinstance(exc, Exception):  # SystemExit and the like: no caller catches them
                exc = RuntimeError(f'the script stopped: {exc!r}')
            self._to_policy.put(Turn(None, True, error=exc))
            return
        self._to_policy.put(Turn(None, True, info))
