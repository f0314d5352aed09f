"""The hand-off between the policy's `infer` calls and the expert's script.

The script is plain sequential code (pick, then place, then home); the policy protocol is one
call per chunk. The script runs in a thread of its own and the two take turns strictly: `infer`
hands over an observation and waits for the next chunk (or the end); the script hands over a
chunk and waits for the next observation. Only one of them runs at a time, so the script's
actions depend on the observations alone (deterministic).
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
    """What the script hands back: a chunk of rows, or the end (`done`) with its sentence."""

    rows: np.ndarray | None
    done: bool = False
    info: str = ''


class Handoff:
    """One script run. `script(first_obs, send)` runs in its own thread; `send(rows)` returns
    the next observation; the script's return value (a sentence) ends the run, as does an
    exception (the sentence names it)."""

    def __init__(self, script: Callable[[dict, Callable[[np.ndarray], dict]], str]) -> None:
        self._script = script
        self._to_script: queue.Queue[dict | None] = queue.Queue(maxsize=1)
        self._to_policy: queue.Queue[Turn] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self.finished = False

    def turn(self, obs: dict) -> Turn:
        """Hand `obs` to the script and wait for its next turn."""
        if self.finished:
            return Turn(None, True, 'the script is over')
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(obs,), name='scripted_expert', daemon=True
            )
            self._thread.start()
        else:
            self._to_script.put(obs)
        out = self._to_policy.get()
        self.finished = out.done
        return out

    def close(self) -> None:
        """Stop a script that waits for an observation that will not come."""
        if self._thread is not None and self._thread.is_alive() and not self.finished:
            self._to_script.put(None)
            self._thread.join(timeout=5.0)
        self.finished = True

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
        except BaseException as exc:  # whatever stops the script, infer must get its turn
            info = f'the script failed: {type(exc).__name__}: {exc}'
        self._to_policy.put(Turn(None, True, info))
