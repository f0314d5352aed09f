"""Waiting on rclpy futures from a thread that does not spin (the executor spins elsewhere)."""

from __future__ import annotations

import time
from typing import Any


def wait_future(future, timeout: float) -> Any:
    """The future's result; TimeoutError if it is not done within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise TimeoutError(f'no answer within {timeout:.0f} s')
        time.sleep(0.001)
    return future.result()
