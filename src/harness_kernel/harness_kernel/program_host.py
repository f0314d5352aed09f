"""The kernel node's handle on the program process: start it sandboxed with the channel and an
output pipe, freeze it between cells, interrupt it, kill it. No ROS here."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from harness_types.camera import CameraView
from harness_types.execution import Execution, TraceTick
from harness_types.process import exit_words, process_stopped
from harness_types.robot_state import ArmState, RobotState
from harness_types.scene import ClaimAnswer, Grip, LocatedObject, SceneReport

from harness_kernel.channel import Channel, ChannelError, Codec
from harness_kernel.program_spawner import SpawnedProcess, Spawner, SpawnerError
from harness_kernel.sandbox import Limits

# What the kernel sends the program, and what the program may send back.
TO_PROGRAM = (
    Execution,
    TraceTick,
    RobotState,
    ArmState,
    CameraView,
    LocatedObject,
    SceneReport,
    ClaimAnswer,
    Grip,
)
FROM_PROGRAM = (LocatedObject,)
# Environment variables that reach the program (numbers libraries' settings); nothing else.
PASSED = ('OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE', 'LANG', 'LC_ALL', 'TZ')
# The ROS wheels' .pth hook (ros_wheels_bootstrapper) starts any Python whose environment lacks
# this variable a second time, with the ROS libraries on LD_LIBRARY_PATH: ~20 ms of every
# program start, for libraries the program process never loads (it imports no ROS).
ROS_WHEELS_BOOTSTRAPPED = {'_ROS_WHEELS_BOOTSTRAP_COMPLETE': '1'}
# Signals the kernel sends to stop program code that overran: raised as exceptions inside it.
REACTIVE_TIMEOUT_SIGNAL = signal.SIGUSR1
CELL_TIMEOUT_SIGNAL = signal.SIGUSR2
WORKSPACE_FULL_SIGNAL = signal.SIGRTMIN + 1  # (a cell stopped as at its timeout, saying why)
FREEZE_WAIT_S = 2.0  # how long a freeze waits for the stop to take effect


class ProgramStartError(RuntimeError):
    """The program process did not start or could not sandbox itself."""


def program_packages() -> list[str]:
    """The directories of the Python packages the program process imports (readable to it):
    the program API and what it is made of, no skill engine, messages or bench (a test
    imports the program process's module and checks)."""
    import harness_kernel
    import harness_perception
    import harness_reactive
    import harness_types

    # harness_perception: the words locate() understands, in its docstring
    modules = (harness_kernel, harness_perception, harness_reactive, harness_types)
    return sorted({os.path.realpath(p) for m in modules for p in m.__path__})


def program_environment(workspace: Path | None) -> dict[str, str]:
    """The program process's whole environment (HOME is its workspace)."""
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.update(
        PATH='/usr/bin:/bin',
        HOME=str(workspace or os.sep),
        PYTHONPATH=os.environ.get('PYTHONPATH', ''),
        PYTHONDONTWRITEBYTECODE='1',
        OPENBLAS_NUM_THREADS='1',
        OMP_NUM_THREADS='1',
        MKL_NUM_THREADS='1',
        **ROS_WHEELS_BOOTSTRAPPED,
    )
    return env


class ProgramHost:
    """One program process at a time; `start()` again after it died or was killed. It is
    forked by `spawner` (a kernel's, shared by its episodes' hosts), or by a spawner of the
    host's own, ended with its process."""

    def __init__(
        self,
        workspace: Path,
        uid: int,
        limits: Limits,
        api: list[str] | None,
        doc_values: dict,
        spawner: Spawner | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.uid = uid
        self.limits = limits
        self.api = api
        self.doc_values = doc_values
        self.spawner = spawner
        self._own_spawner: Spawner | None = None
        self.process: SpawnedProcess | None = None
        self._forked_by: subprocess.Popen | None = None  # the spawner process that forked it
        self.channel: Channel | None = None
        self.output_fd = -1
        self.sandbox: dict = {}
        self.starts = 0
        self.frozen = False

    def start(self, timeout: float = 60.0) -> dict:
        """Start a fresh program process and wait until it reports its sandbox. Returns the
        sandbox report; ProgramStartError with the process's own words if it fails."""
        self.stop()
        self.workspace.mkdir(parents=True, exist_ok=True)
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        env = program_environment(self.workspace)
        config = {
            'channel': theirs.fileno(),
            'workspace': str(self.workspace),
            'uid': self.uid,
            'parent': os.getpid(),
            'limits': asdict(self.limits),
            'read': program_packages(),
            'api': self.api,
            'doc_values': self.doc_values,
        }
        spawner = self.spawner
        if spawner is None:  # (stop() above ended the last one of its own)
            spawner = self._own_spawner = Spawner(program_environment(None))
        try:
            self.process = spawner.spawn(config, env, theirs.fileno(), out_w)
            self._forked_by = spawner.process  # (its death kills the program process too)
        except SpawnerError as exc:
            os.close(out_r)
            ours.close()
            raise ProgramStartError(str(exc)) from None
        finally:
            theirs.close()
            os.close(out_w)
        os.set_blocking(out_r, False)
        self.output_fd = out_r
        self.channel = Channel(ours, Codec(FROM_PROGRAM))
        self.starts += 1
        self.frozen = False
        try:
            ready = self.channel.recv(timeout=timeout)
        except (ChannelError, TimeoutError, OSError) as exc:
            words = self.read_output().strip()[-2000:]
            self.stop()
            raise ProgramStartError(
                f'the program process did not start ({exc}): {words or "no output"}'
            ) from None
        if not isinstance(ready, dict) or ready.get('op') != 'ready' or ready.get('error'):
            reason = ready.get('error') if isinstance(ready, dict) else repr(ready)
            self.stop()
            raise ProgramStartError(f'the program process could not sandbox itself: {reason}')
        self.sandbox = ready.get('sandbox') or {}
        return self.sandbox

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else -1

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_description(self) -> str:
        """How the process ended, in words."""
        if self.process is None:
            return 'it was never started'
        code = self.process.poll()
        if code is None:
            return 'it is still running'
        spawner = self._forked_by
        if spawner is not None and spawner.poll() is not None:
            # The trusted process that forked it died, and took it along: not the program's
            # doing (a model must not take its code for the cause).
            return (
                f"the kernel's program spawner died ({exit_words(spawner.returncode)}) and ended "
                'it: a fault of the station, not of the program'
            )
        return exit_words(code)

    def read_output(self, limit: int = 1 << 20) -> str:
        """Whatever the program wrote to stdout/stderr since the last read (non-blocking).
        At the pipe's end (the program closed both) the pipe is closed here too."""
        chunks, total = [], 0
        while self.output_fd >= 0 and total < limit:
            try:
                chunk = os.read(self.output_fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                os.close(self.output_fd)
                self.output_fd = -1
                break
            chunks.append(chunk)
            total += len(chunk)
        return b''.join(chunks).decode('utf-8', errors='replace')

    def wait(self, timeout: float) -> None:
        """Give a process that is ending this long to be reaped."""
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)

    def freeze(self) -> None:
        """Stop every thread of the program (between cells nothing of it runs)."""
        if self.alive() and not self.frozen:
            self._signal(signal.SIGSTOP)
            self.frozen = True
            # SIGSTOP is delivered asynchronously: frozen means stopped, so wait until it is.
            deadline = time.monotonic() + FREEZE_WAIT_S
            while not process_stopped(self.pid) and self.alive() and time.monotonic() < deadline:
                time.sleep(0.001)

    def thaw(self) -> None:
        if self.alive() and self.frozen:
            self._signal(signal.SIGCONT)
        self.frozen = False

    def interrupt(self, sig: int) -> None:
        if self.alive():
            self._signal(sig)

    def _signal(self, sig: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                self.process.send_signal(sig)

    def stop(self) -> None:
        """Kill the process (if any) and close the channel and the pipe."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGCONT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            self.process.close()
        if self._own_spawner is not None:
            self._own_spawner.close()
            self._own_spawner = None
        if self.channel is not None:
            self.channel.sock.close()
            self.channel = None
        if self.output_fd >= 0:
            os.close(self.output_fd)
            self.output_fd = -1
        self.frozen = False
