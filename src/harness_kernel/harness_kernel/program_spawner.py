"""The program spawner: the process that forks program processes, each with the program
process's modules already imported.

A program process started as its own Python spends ~120 ms of CPU before it is ready, nearly
all of it in interpreter start-up and imports (numpy, the program API); a warm station starts
one every episode. The spawner pays that once: it imports what the program process imports,
then forks a child per request, which goes on exactly as `python -m harness_kernel.program`
would (harness_kernel.program.main: it sandboxes itself, reports ready, runs cells). The
spawner runs no program code and holds nothing of an episode: a request carries the config,
the environment, the channel and the output pipe, and once the child has them the spawner
closes its copies.

In the child, before any of the program's own code runs: every descriptor but stdin (/dev/null),
stdout and stderr (the output pipe) and the channel (moved to descriptor 3) is closed, the
spawner's socket among them; sys.stdin, sys.stdout and sys.stderr are new streams over the
first three; the environment and the working directory are the request's, and
numpy's and Python's global random generators draw new seeds, as in a process of its own. The
spawner runs with `-P` (no working directory on sys.path): program.main puts the workspace
first on sys.path once the sandbox is on, so no file a program wrote is imported before.
What a child shares with its siblings: the spawner's interpreter settings (read from the same
environment, less HOME), its string hash seed and its memory layout.

The spawner dies with the thread that started it (PR_SET_PDEATHSIG: a thread of the kernel's
Spawner handle, which lives as long as it), and its children with it. It never starts a
thread (a fork copies only the forking one; OPENBLAS_NUM_THREADS=1 keeps numpy's library to
one) and ignores SIGINT (a Ctrl-C to the process group is the kernel's to act on).

Protocol on the socket (a Unix socket pair of packets, one JSON object each, at most 64 KB): the
kernel sends {"config": ..., "env": ...} with two descriptors (the channel, the output pipe's
write end) and gets {"pid": N} with the child's pidfd (the kernel signals and watches the child
through it, never by a pid that may be another process's by then) or {"error": "..."}; the
spawner sends {"exit": N, "code": C} when a child ends (C as subprocess gives it: negative for
a signal). A spawner that does not answer is ended, with its children; a request it ended
before answering goes once more to a new one.

    python -P -m harness_kernel.program_spawner SOCKET_FD KERNEL_PID
"""

from __future__ import annotations

import array
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

MESSAGE_BYTES = 65536
CHANNEL_FD = 3  # the channel's descriptor in a child (the program process's config says it)
ANSWER_S = 30.0  # how long the kernel waits for the spawner to answer a request (it forks)
EXIT_REPORT_S = 5.0  # how long an ended child's exit code may take to be reported
_PR_SET_PDEATHSIG = 1
T = TypeVar('T')


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
            data, fds = _receive_packet(sock, 2)
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
            code = 1
            try:
                code = _child(sock, (wake_r, wake_w), request, parent, *fds)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:  # (it exists until reaped here, so this is not its exit)
            os.kill(pid, signal.SIGKILL)
            _send(sock, {'error': f'no pidfd for the program process: {exc}'})
            continue
        _send(sock, {'pid': pid}, [pidfd])
        os.close(pidfd)


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {'exit': pid, 'code': os.waitstatus_to_exitcode(status)})


def _receive_packet(sock: socket.socket, max_fds: int, flags: int = 0) -> tuple[bytes, list[int]]:
    """One packet and the descriptors it carries (socket.recv_fds of Python 3.11 drops its
    flags argument)."""
    fds = array.array('i')
    data, ancillary, _flags, _addr = sock.recvmsg(
        MESSAGE_BYTES, socket.CMSG_LEN(max_fds * fds.itemsize), flags
    )
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    with contextlib.suppress(OSError):  # the kernel went away: the next receive ends the loop
        socket.send_fds(sock, [json.dumps(message).encode()], fds or [])


def _child(
    sock: socket.socket, wake: tuple[int, int], request: dict, parent: int, channel: int, out: int
) -> int:
    """In a forked child: become the program process of `request` (its exit code)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
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
        # streams of their own over the new descriptors, as Python makes them (the spawner's
        # were made over /dev/null, which is seekable; a pipe is not)
        for fd, name, mode in ((0, 'stdin', 'r'), (1, 'stdout', 'w'), (2, 'stderr', 'w')):
            old = getattr(sys, name)
            stream = open(fd, mode, encoding=old.encoding, errors=old.errors, closefd=False)  # noqa: SIM115
            stream.reconfigure(line_buffering=old.line_buffering)
            setattr(sys, name, stream)
            setattr(sys, f'__{name}__', stream)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in (request.get('env') or {}).items()})
        os.chdir(str(config['workspace']))
        sys.modules['numpy'].random.seed()  # fresh entropy, as a process of its own had
        config['channel'] = CHANNEL_FD
        config['parent'] = parent  # the sandbox checks that it still is (it dies with it)
        code = sys.modules['harness_kernel.program'].main([json.dumps(config)])
    except SystemExit as exc:  # as the interpreter ends on one
        code = exc.code
        if code is not None and not isinstance(code, int):
            with contextlib.suppress(BaseException):
                print(code, file=sys.stderr)
            code = 1
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):  # the program's own, as at an interpreter's end
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    return code if isinstance(code, int) else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    sock = socket.socket(fileno=int(argv[0]))
    if os.getppid() != int(argv[1]):  # the kernel ended before the spawner could follow it
        return 1
    import harness_kernel.program  # noqa: F401 (what every child would import: imported once)

    return serve(sock)


# The kernel's side ----------------------------------------------------------------------------


class SpawnedProcess:
    """A program process a spawner forked, as much of subprocess.Popen as ProgramHost uses.
    Signals go through its pidfd (none reaches another process that took its pid); its exit
    code comes from the spawner that forked it, which reaps it. Thread-safe: the cell's
    thread and the reactive lane poll and signal the same process."""

    def __init__(self, spawner: Spawner, sock: socket.socket, pid: int, pidfd: int) -> None:
        self.spawner = spawner
        self.sock = sock  # the spawner process that forked it (a later one knows nothing of it)
        self.pid = pid
        self.pidfd = pidfd
        self.returncode: int | None = None
        self._reaping = threading.Lock()  # one thread takes the exit report; others wait for it
        self._fd = threading.Lock()  # the pidfd is not closed while a signal goes through it

    def poll(self) -> int | None:
        """The exit code once the process has ended (None while it runs); waits up to a
        moment for the spawner's report of an exit the pidfd shows."""
        with self._reaping:
            if self.returncode is None and self._ended():
                self.returncode = self.spawner.exit_code(self.pid, self.sock)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f'program process {self.pid}', timeout or 0.0)
            pidfd = self.pidfd  # (closed meanwhile: the next poll says it ended)
            with contextlib.suppress(OSError, ValueError):
                select.select([pidfd] if pidfd >= 0 else [], [], [], min(left or 0.05, 0.05))
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        """ProcessLookupError when it has ended."""
        with self._fd:
            if self.pidfd < 0:
                raise ProcessLookupError(self.pid)
            signal.pidfd_send_signal(self.pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        """Let go of the pidfd (the exit code, once known, stays)."""
        with self._fd:
            if self.pidfd >= 0:
                os.close(self.pidfd)
                self.pidfd = -1

    def _ended(self) -> bool:
        with self._fd:
            if self.pidfd < 0:
                return True
            readable, _, _ = select.select([self.pidfd], [], [], 0.0)
            return bool(readable)


class Spawner:
    """The kernel's handle on its spawner process, started on first use and again if it
    died, always on a thread of this handle's own (the spawner dies with it). Thread-safe; no
    lock is held while a spawner is waited for, so signalling and polling programs never wait
    on it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self.process: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._spawning = threading.Lock()  # one request at a time
        self._lock = threading.Lock()  # the socket's reads and what they filled in
        self._exits: dict[int, list[int]] = {}  # by pid, in the order reported
        self._replies: list[tuple[dict, list[int]]] = []
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix='program_spawner')

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self, config: dict, env: dict[str, str], channel: int, out: int) -> SpawnedProcess:
        """Fork a program process with `config` (program.main's), its environment `env`, the
        channel and the output pipe's write end (the caller closes its own copies)."""
        request = json.dumps({'config': config, 'env': env}).encode()
        if len(request) > MESSAGE_BYTES:
            raise SpawnerError(f'a spawn request of {len(request)} bytes (at most {MESSAGE_BYTES})')
        with self._spawning:
            for last in (False, True):
                if not self.alive():
                    try:
                        started = self._starter.submit(self._start)
                    except RuntimeError:  # its thread is gone: close() was called
                        raise SpawnerError('the program spawner was closed') from None
                    started.result()  # SpawnerError when it did not start
                sock = self.sock
                assert sock is not None
                answer, why = None, ''
                try:
                    socket.send_fds(sock, [request], [channel, out])
                    answer = self._wait_for(sock, self._take_reply, ANSWER_S)
                except OSError as exc:
                    why = str(exc)
                if answer is not None:
                    break
                silent = not why and self.alive()
                why = why or (f'none in {ANSWER_S:g} s' if silent else 'it ended')
                # Ended, with its children: nothing it sends late is taken for the answer to
                # another request. One that ended before it answered (killed, or ending as the
                # request came) is started again once; a silent one is not waited for again.
                self._stop()
                if last or silent:
                    raise SpawnerError(f'the program spawner did not answer: {why}')
        reply, fds = answer
        if 'pid' not in reply or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise SpawnerError(f'the program spawner could not fork: {reply.get("error")}')
        return SpawnedProcess(self, sock, int(reply['pid']), fds[0])

    def exit_code(self, pid: int, sock: socket.socket) -> int:
        """The exit code of `pid`, a child that has ended (its pidfd said so), of the
        spawner on `sock`: its report, read when it comes (-SIGKILL if that spawner is gone
        without one: its children died with it)."""
        if sock is not self.sock:
            return -signal.SIGKILL
        code = self._wait_for(sock, lambda: self._take_exit(pid), EXIT_REPORT_S)
        return -signal.SIGKILL if code is None else code

    def _take_reply(self) -> tuple[dict, list[int]] | None:
        return self._replies.pop(0) if self._replies else None

    def _take_exit(self, pid: int) -> int | None:
        return self._exits[pid].pop(0) if self._exits.get(pid) else None

    def _wait_for(
        self, sock: socket.socket, take: Callable[[], T | None], limit: float
    ) -> T | None:
        """What `take()` (called under the lock) gives once it gives something, reading the
        spawner's packets meanwhile; None once the spawner has ended or `limit` seconds passed
        without it (what the spawner sent before is read first)."""
        deadline = time.monotonic() + limit
        over = False
        while True:
            with self._lock:
                got = take()
            if got is not None or over:
                return got
            # (a spawner ended by another thread: its socket is closed, or another's by now)
            gone = sock is not self.sock or not self.alive()
            over = gone or time.monotonic() > deadline
            if sock is self.sock:
                self._receive(sock, 0.0 if over else 0.01)

    def close(self) -> None:
        """End the spawner (and so its children)."""
        with self._spawning:
            self._stop()
        self._starter.shutdown(wait=True)

    def _stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()

    def _start(self) -> None:
        """On this handle's thread: a new spawner process (the last one ended first)."""
        self._stop()
        with self._lock:
            for _reply, fds in self._replies:
                for fd in fds:
                    os.close(fd)
            self._exits, self._replies = {}, []
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, '-P', '-m', 'harness_kernel.program_spawner']
        try:
            self.process = subprocess.Popen(
                [*command, str(theirs.fileno()), str(os.getpid())],
                env=self.env,
                cwd=os.sep,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            ours.close()
            raise SpawnerError(f'the program spawner did not start: {exc}') from None
        finally:
            theirs.close()
        self.sock = ours

    def _receive(self, sock: socket.socket, timeout: float) -> None:
        """Wait up to `timeout` for the spawner's packets (no lock held), then read what
        came."""
        try:
            ready, _, _ = select.select([sock], [], [], timeout)
        except (OSError, ValueError):  # closed meanwhile: the caller sees the spawner gone
            return
        if not ready:
            return
        with self._lock:
            while True:
                try:
                    data, fds = _receive_packet(
                        sock, 1, socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC
                    )
                except (OSError, ValueError):  # none waiting (BlockingIOError), or closed
                    return
                if not data:
                    return  # the spawner ended: alive() says so
                message = json.loads(data)
                if 'exit' in message:
                    self._exits.setdefault(int(message['exit']), []).append(int(message['code']))
                else:
                    self._replies.append((message, fds))


if __name__ == '__main__':
    sys.exit(main())
