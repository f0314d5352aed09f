"""The program spawner: the process that forks program processes, each with the program
process's modules already imported.

A program process started as its own Python spends ~120 ms of CPU before it is ready, nearly
all of it in interpreter start-up and imports (numpy, the program API); a warm station starts
one every episode. The spawner pays that once: it imports what the program process imports,
then forks a child per request, which goes on exactly as `python -m harness_kernel.program`
would (harness_kernel.program.main: it sandboxes itself, reports ready, runs cells). The
spawner runs no program code and holds nothing of an episode: a request carries the config,
the channel and the output pipe, and once the child has them the spawner closes its copies.

In the child, before any of the program's own code runs: every descriptor but stdin (/dev/null),
stdout and stderr (the output pipe) and the channel (moved to descriptor 3) is closed, the
spawner's socket among them; the environment is the request's, the working directory and the
first entry of sys.path are the workspace (as for `-m` started there). Python's `random` draws
a new seed in each child (CPython's fork hook); numpy's global generator starts where the
spawner left it, unused, in every child alike.

The spawner is started by the kernel node's program starter thread and dies with it
(PR_SET_PDEATHSIG), and its children die with it. It never starts a thread (a fork copies only
the forking one; OPENBLAS_NUM_THREADS=1 keeps numpy's library to one).

Protocol on the socket (a Unix socket pair of packets, one JSON object each, at most 64 KB): the
kernel sends {"config": ..., "env": ...} with two descriptors (the channel, the output pipe's
write end) and gets {"pid": N} or {"error": "..."}; the spawner sends {"exit": N, "code": C}
when a child ends (C as subprocess gives it: negative for a signal).

    python -m harness_kernel.program_spawner FD
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

MESSAGE_BYTES = 65536
CHANNEL_FD = 3  # the channel's descriptor in a child (the program process's config says it)
ANSWER_S = 30.0  # how long the kernel waits for the spawner to answer a request (it forks)
_PR_SET_PDEATHSIG = 1


class SpawnerError(RuntimeError):
    """The spawner did not start, or did not answer."""


# The spawner process ------------------------------------------------------------------------


def serve(sock: socket.socket) -> int:
    """Fork a child per request until the kernel closes the socket (then 0)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd is written
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            _report_exits(sock)
        if sock not in ready:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE_BYTES, 2)
        except OSError:
            return 0
        if not data:
            return 0
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            _send(sock, {'error': f'a request carries 2 descriptors, not {len(fds)}'})
            continue
        try:
            request = json.loads(data)
            parent = os.getpid()
            pid = os.fork()
        except (ValueError, OSError) as exc:
            for fd in fds:
                os.close(fd)
            _send(sock, {'error': f'{type(exc).__name__}: {exc}'})
            continue
        if pid == 0:
            os._exit(_child(sock, (wake_r, wake_w), request, parent, *fds))
        for fd in fds:
            os.close(fd)
        _send(sock, {'pid': pid})


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {'exit': pid, 'code': os.waitstatus_to_exitcode(status)})


def _send(sock: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):  # the kernel went away: the next receive ends the loop
        sock.send(json.dumps(message).encode())


def _child(
    sock: socket.socket, wake: tuple[int, int], request: dict, parent: int, channel: int, out: int
) -> int:
    """In a forked child: become the program process of `request` (its exit code)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
        config = dict(request['config'])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(channel, CHANNEL_FD)
        os.closerange(CHANNEL_FD + 1, os.sysconf('SC_OPEN_MAX'))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in (request.get('env') or {}).items()})
        workspace = str(config['workspace'])
        os.chdir(workspace)
        sys.path[0] = workspace  # as `python -m` started in the workspace has it
        config['channel'] = CHANNEL_FD
        config['parent'] = parent  # the sandbox checks that it still is (it dies with it)
        code = sys.modules['harness_kernel.program'].main([json.dumps(config)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    return code if isinstance(code, int) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    sock = socket.socket(fileno=int(argv[0]))
    if os.getppid() == 1:  # the kernel ended before the spawner could follow it
        return 1
    import harness_kernel.program  # noqa: F401 (what every child would import: imported once)

    return serve(sock)


# The kernel's side ----------------------------------------------------------------------------


class SpawnedProcess:
    """A program process a spawner forked, as much of subprocess.Popen as ProgramHost uses.
    Its exit code comes from the spawner, which reaps it; a signal is not sent after the exit
    is known (its pid may be another process's by then)."""

    def __init__(self, spawner: Spawner, pid: int, generation: int) -> None:
        self.spawner = spawner
        self.pid = pid
        self.generation = generation  # of the spawner process that forked it
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.spawner.exit_code(self.pid, self.generation)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f'program process {self.pid}', timeout or 0.0)
            self.spawner.wait_message(0.05)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Spawner:
    """The kernel's handle on its spawner process, started on first use (on the thread that
    calls `spawn`, which it dies with) and again if it died. Thread-safe."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self.process: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._generation = 0  # spawner processes started
        self._exits: dict[int, int] = {}
        self._replies: list[dict] = []

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self, config: dict, env: dict[str, str], channel: int, out: int) -> SpawnedProcess:
        """Fork a program process with `config` (program.main's), its environment `env`, the
        channel and the output pipe's write end (the caller closes its own copies)."""
        with self._lock:
            if not self.alive():
                self._start()
            assert self.sock is not None
            request = json.dumps({'config': config, 'env': env}).encode()
            if len(request) > MESSAGE_BYTES:
                raise SpawnerError(
                    f'a spawn request of {len(request)} bytes (at most {MESSAGE_BYTES})'
                )
            deadline = time.monotonic() + ANSWER_S
            try:
                socket.send_fds(self.sock, [request], [channel, out])
                while not self._replies:
                    if time.monotonic() > deadline:
                        raise OSError(f'no answer in {ANSWER_S:g} s')
                    self._read(ANSWER_S)
            except OSError as exc:
                self.process.kill()  # (a spawner that does not answer is started again)
                raise SpawnerError(f'the program spawner did not answer: {exc}') from None
            reply = self._replies.pop(0)
            generation = self._generation
        if 'pid' not in reply:
            raise SpawnerError(f'the program spawner could not fork: {reply.get("error")}')
        return SpawnedProcess(self, int(reply['pid']), generation)

    def exit_code(self, pid: int, generation: int) -> int | None:
        """`pid`'s exit code if the spawner reported it (messages waiting are read first)."""
        with self._lock:
            if generation != self._generation:  # that spawner ended, and its children with it
                return -signal.SIGKILL
            if pid not in self._exits and self.sock is not None:
                with contextlib.suppress(OSError):
                    self._read(0.0)
            if pid in self._exits:
                return self._exits[pid]
            if not self.alive():  # its children died with it (PR_SET_PDEATHSIG)
                return -signal.SIGKILL
            return None

    def wait_message(self, timeout: float) -> None:
        with self._lock:
            if self.sock is not None:
                with contextlib.suppress(OSError):
                    self._read(timeout)

    def close(self) -> None:
        """End the spawner (and so its children)."""
        with self._lock:
            if self.sock is not None:
                self.sock.close()
                self.sock = None
            if self.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                self.process.wait()

    def _start(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'harness_kernel.program_spawner', str(theirs.fileno())],
                env=self.env,
                cwd=os.sep,
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            ours.close()
            raise SpawnerError(f'the program spawner did not start: {exc}') from None
        finally:
            theirs.close()
        self.sock, self._exits, self._replies = ours, {}, []
        self._generation += 1

    def _read(self, timeout: float | None) -> None:
        """Read what the spawner sent (waiting up to `timeout`, None: until something comes)."""
        assert self.sock is not None
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return
        while ready:
            packet = self.sock.recv(MESSAGE_BYTES)
            if not packet:
                raise OSError('the program spawner ended')
            message = json.loads(packet)
            if 'exit' in message:
                self._exits[int(message['exit'])] = int(message['code'])
            else:
                self._replies.append(message)
            ready, _, _ = select.select([self.sock], [], [], 0.0)


if __name__ == '__main__':
    sys.exit(main())
