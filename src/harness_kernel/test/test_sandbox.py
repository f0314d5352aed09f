"""The program process holds a hostile program: each attack a test, each one contained, and
the kernel (this process) goes on. The kernel core runs here with a scripted robot; the
program runs in its real sandbox."""

import json
import os
import signal
from pathlib import Path

import pytest

import harness_bench


@pytest.fixture(scope='module')
def sandboxed(tmp_path_factory):
    from conftest import DOC_VALUES, ScriptedRobot
    from harness_kernel.kernel import Kernel
    from harness_kernel.program_host import ProgramHost
    from harness_kernel.sandbox import Limits

    os.environ['ANTHROPIC_API_KEY'] = 'sk-ant-test-secret'  # the kernel's environment has it
    robot = ScriptedRobot()
    root = tmp_path_factory.mktemp('sandbox')
    host = ProgramHost(root / 'ws', 61098, Limits(memory_mb=1024, file_size_mb=8), None, DOC_VALUES)
    kernel = Kernel(robot, host, 5.0, 20.0, 0.765, 0.2, None, lambda r: None)
    robot.kernel = kernel
    kernel.start()
    try:
        yield kernel, robot, root
    finally:
        kernel.close()
        os.environ.pop('ANTHROPIC_API_KEY', None)


def run(sandboxed, code):
    kernel, *_ = sandboxed
    return kernel.run_cell(code)


def test_the_sandbox_layers_are_on(sandboxed):
    kernel, *_ = sandboxed
    s = kernel.host.sandbox
    assert s['landlock_abi'] >= 1 and s['seccomp'] and s['network_namespace']
    assert s['limits']['RLIMIT_AS'] == 1024 * 1024 * 1024
    r = run(sandboxed, 'import os\nprint(sorted(os.environ))')
    assert 'ANTHROPIC_API_KEY' not in r.output and 'ROS_DOMAIN_ID' not in r.output


def test_no_reading_other_processes(sandboxed):
    r = run(
        sandboxed,
        f'for p in ["/proc/{os.getpid()}/environ", "/proc/1/environ", "/proc/self/environ", '
        f'"/proc/{os.getpid()}/cmdline"]:\n'
        '    try:\n        open(p, "rb").read()\n        print("READ", p)\n'
        '    except OSError as e:\n        print("refused", type(e).__name__)',
    )
    assert 'READ' not in r.output and r.output.count('refused') == 4, r.output


def test_no_reading_the_bench_or_other_runs(sandboxed):
    tasks = Path(harness_bench.__file__).resolve().parent / 'tasks' / 'lift_cube.py'
    _, _, root = sandboxed
    (root / 'other-run.txt').write_text('layout 2 seed 7')
    r = run(
        sandboxed,
        f'for p in [{str(tasks)!r}, {str(root / "other-run.txt")!r}, "/etc/passwd"]:\n'
        '    try:\n        open(p).read()\n        print("READ", p)\n'
        '    except OSError as e:\n        print("refused", type(e).__name__)\n'
        'try:\n    import harness_bench.tasks\n'
        'except (ImportError, OSError):\n    print("no import")',
    )
    assert 'READ' not in r.output and r.output.count('refused') == 3, r.output
    assert 'no import' in r.output


def test_no_processes_no_threads_no_exec(sandboxed):
    r = run(
        sandboxed,
        'import os, ctypes, subprocess, threading\n'
        'libc = ctypes.CDLL(None, use_errno=True)\n'
        'print("fork", libc.fork())\n'
        'try:\n    os.fork()\nexcept OSError as e:\n    print("os.fork", e.errno)\n'
        'try:\n    subprocess.run(["/bin/true"])\n'
        'except OSError as e:\n    print("subprocess", e.errno)\n'
        'fd = libc.syscall(319, b"x", 0)\n'
        'print("fexecve", libc.fexecve(fd, None, None) if fd >= 0 else "no memfd")\n'
        'try:\n    threading.Thread(target=print).start()\n'
        'except RuntimeError as e:\n    print("thread", e)\n',
    )
    assert 'fork -1' in r.output and 'os.fork 1' in r.output and 'subprocess' in r.output
    assert 'fexecve -1' in r.output or 'no memfd' in r.output
    assert "thread can't start new thread" in r.output, r.output


def test_no_network(sandboxed):
    r = run(
        sandboxed,
        'import socket\n'
        'for family, kind in [(socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, '
        'socket.SOCK_STREAM), (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_NETLINK, '
        'socket.SOCK_RAW)]:\n'
        '    try:\n        socket.socket(family, kind)\n        print("OPEN", family)\n'
        '    except OSError as e:\n        print("refused", e.errno)\n',
    )
    assert 'OPEN' not in r.output and r.output.count('refused') == 4, r.output


def test_no_signals_to_anyone_else(sandboxed):
    r = run(
        sandboxed,
        'import os, signal\n'
        'for pid in [os.getppid(), 1, -1, 0]:\n'
        '    try:\n        os.kill(pid, signal.SIGSTOP)\n        print("SENT", pid)\n'
        '    except OSError as e:\n        print("refused", e.errno)\n',
    )
    assert 'SENT' not in r.output and r.output.count('refused') == 4, r.output
    assert run(sandboxed, 'print("alive")').output.strip() == 'alive'


def test_no_writes_outside_the_workspace(sandboxed):
    _, _, root = sandboxed
    r = run(
        sandboxed,
        f'for p in [{str(root / "escape.txt")!r}, "/dev/shm/x", "/tmp/x", "/dev/kmsg"]:\n'
        '    try:\n        open(p, "w").write("x")\n        print("WROTE", p)\n'
        '    except OSError as e:\n        print("refused", e.errno)\n'
        'import os\n'
        'for f in (lambda: os.chmod("/tmp", 0o777), lambda: os.chown("/tmp", 1, 1), '
        'lambda: os.mknod("dev", 0o600 | 0o60000, os.makedev(8, 0))):\n'
        '    try:\n        f()\n        print("CHANGED")\n'
        '    except OSError as e:\n        print("refused", e.errno)\n'
        'open("notes.txt", "w").write("ok")\nprint(os.listdir("."))',
    )
    assert 'WROTE' not in r.output and 'CHANGED' not in r.output, r.output
    assert r.output.count('refused') == 7 and "['notes.txt']" in r.output
    assert not (root / 'escape.txt').exists() and oct(os.stat('/tmp').st_mode)[-4:] == '1777'


def test_memory_and_file_size_are_bounded(sandboxed):
    r = run(
        sandboxed,
        'try:\n    x = bytearray(6 * 1024**3)\nexcept MemoryError:\n    print("no memory")\n'
        'try:\n    open("big", "wb").write(b"x" * (20 * 1024**2))\n'
        'except OSError as e:\n    print("too big", e.errno)',
    )
    assert 'no memory' in r.output and 'too big' in r.output, r.output + r.traceback
    assert run(sandboxed, 'print("alive")').output.strip() == 'alive'


def test_the_programs_view_of_its_own_report_is_not_the_kernels(sandboxed):
    kernel, robot, _ = sandboxed
    robot.events = ['BLOCKED']
    # The program patches its side of the API to claim success and hide the event.
    r = run(
        sandboxed,
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        'real = api._call\n'
        'def forged(name, **args):\n    try:\n        return real(name, **args)\n'
        '    except BaseException:\n        return None\n'
        'api._call = forged\nhome()\nprint("pretend all is well")',
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'BLOCKED'
    assert [e.event for e in r.executions] == ['BLOCKED']


def test_a_program_that_ignores_the_timeout_is_killed_and_the_kernel_goes_on(sandboxed):
    kernel, *_ = sandboxed
    r = run(
        sandboxed,
        'import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\nwhile True:\n    pass',
    )
    assert r.status == 'error' and 'did not stop when interrupted' in r.traceback
    assert run(sandboxed, 'print("fresh")').output.startswith('fresh')
    assert kernel.host.starts >= 2


@pytest.mark.parametrize(
    'end',
    [
        'import ctypes\nctypes.string_at(0)',  # the process crashes
        'import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\nwhile True:\n    pass',
    ],
    ids=['crashed', 'killed at its timeout'],
)
def test_what_a_program_printed_before_its_process_ended_is_kept(sandboxed, end):
    r = run(sandboxed, f'print("got this far")\n{end}')
    assert r.status == 'error' and 'got this far' in r.output, (r.output, r.traceback)
    assert run(sandboxed, 'print("fresh")').output.startswith('fresh')


def test_garbage_on_the_channel_costs_the_program_not_the_kernel(sandboxed):
    r = run(
        sandboxed,
        'import socket, struct\n'
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        'api.link.channel.sock.sendall(struct.pack("<Q", 5) + b"hello")\n'
        'state()',
    )
    assert r.status == 'error' and 'stopped' in r.traceback
    assert run(sandboxed, 'print("fresh")').output.startswith('fresh')


@pytest.mark.parametrize(
    'rogue',
    [
        'api.link.channel.sock.sendall(struct.pack("<Q", 5) + b"hello")',  # garbage
        'api.link.channel.send({"op": "cell", "code": ""})',  # a frame out of place
        'os._exit(3)',  # the process gone mid-step
    ],
)
def test_a_guard_that_breaks_the_channel_costs_the_program_not_the_kernel(sandboxed, rogue):
    # The guard runs while the kernel's reactive_step thread holds the channel (lent by the
    # cell's thread for the execution): what it reads there ends the cell on the cell's thread.
    kernel, robot, _ = sandboxed
    robot.ticks = 5
    try:
        r = run(
            sandboxed,
            'import os, struct\n'
            'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
            'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
            f'def rogue(obs):\n    {rogue}\n    return False\n'
            'when(rogue)\nmove_joints([0.1] * 6, arm="left")',
        )
    finally:
        robot.ticks = 0
    assert r.status == 'error' and 'stopped' in r.traceback, r.traceback
    assert run(sandboxed, 'print("fresh")').output.startswith('fresh')


def test_the_program_cannot_signal_its_own_timeout_away_between_cells(sandboxed):
    kernel, *_ = sandboxed
    run(sandboxed, 'import time\nstarted = time.monotonic()')
    assert kernel.host.frozen  # between cells nothing of the program runs
    with open(f'/proc/{kernel.host.pid}/status') as status:
        assert any(ln.startswith('State:') and 'T' in ln for ln in status)
    assert signal.SIGSTOP


def test_the_program_never_runs_as_root(sandboxed):
    """Even where the Python installation or the workspace lies behind a folder closed to
    other users (this suite's own: a pyenv under /root, pytest's 0700 base folder), the
    program runs as its own uid: those folders are opened in its mount namespace only."""
    kernel, *_ = sandboxed
    r = run(sandboxed, 'import os\nprint(os.getresuid(), os.getresgid())')
    assert '0' not in r.output.replace('(', ' ').replace(',', ' ').split(), r.output
    if os.geteuid() == 0:
        assert kernel.host.sandbox['uid'] not in (0, -1)
        assert kernel.host.sandbox['mount_namespace']


def test_prlimit_reaches_only_the_program_itself(sandboxed):
    """prlimit64 set RLIMIT_FSIZE=1 on the kernel node (and on any root process): the kernel
    stopped writing its log, and one episode could take down another's processes."""
    import resource
    import subprocess

    # Another episode's process, say; as root, one of the program's own uid, so that only the
    # seccomp filter (not the permission check between users) can refuse the call.
    own_uid = {'user': kernel_uid(sandboxed)} if os.geteuid() == 0 else {}
    bystander = subprocess.Popen(['sleep', '60'], **own_uid)
    try:
        before = resource.getrlimit(resource.RLIMIT_FSIZE)
        r = run(
            sandboxed,
            'import os, resource\n'
            f'for pid in [os.getppid(), 1, {bystander.pid}]:\n'
            '    try:\n        resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, 1))\n'
            '        print("LIMITED", pid)\n'
            '    except OSError as e:\n        print("refused", e.errno)\n'
            'print("own", resource.prlimit(0, resource.RLIMIT_NOFILE)[0] > 0)',
        )
        assert 'LIMITED' not in r.output and r.output.count('refused') == 3, r.output
        assert 'own True' in r.output
        assert resource.getrlimit(resource.RLIMIT_FSIZE) == before
        limits = Path(f'/proc/{bystander.pid}/limits').read_text()
        assert bystander.poll() is None and 'Max file size             unlimited' in limits
    finally:
        bystander.kill()
        bystander.wait()


def test_system_calls_a_program_does_not_need_are_refused(sandboxed):
    """An allow list: io_uring, memfd_create, personality, prctl, utime on files outside,
    fallocate, and every new socket (so no Unix socket file outside the workspace can be
    reached)."""
    import socket

    _, _, root = sandboxed
    outside = root / 'outside.sock'
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(outside))
    listener.listen(1)
    listener.setblocking(False)
    stamp = root / 'stamp.txt'
    stamp.write_text('x')
    if os.geteuid() == 0:  # the program's own file, so that only the filter can refuse utime
        os.chown(stamp, kernel_uid(sandboxed), kernel_uid(sandboxed))
    mtime = stamp.stat().st_mtime
    try:
        r = run(
            sandboxed,
            'import ctypes, os, socket\n'
            'libc = ctypes.CDLL(None, use_errno=True)\n'
            'def attempt(name, f):\n'
            '    try:\n        r = f()\n'
            '        print(name, "refused" if r == -1 else "ALLOWED")\n'
            '    except OSError:\n        print(name, "refused")\n'
            'attempt("memfd", lambda: os.memfd_create("x"))\n'
            'attempt("io_uring", lambda: libc.syscall(425, 8, ctypes.create_string_buffer(120)))\n'
            'attempt("personality", lambda: libc.personality(0x0400000))\n'
            'attempt("prctl", lambda: libc.prctl(1, 0, 0, 0, 0))\n'
            f'attempt("utime", lambda: os.utime({str(stamp)!r}, (0, 0)))\n'
            'def connect():\n'
            '    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
            f'    s.connect({str(outside)!r})\n'
            'attempt("connect", connect)\n'
            'attempt("socketpair", lambda: socket.socketpair() and 0)\n'
            'attempt("dgram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))\n'
            'import fcntl, termios\n'
            'a, b = socket.socketpair()\n'
            'attempt("setown", lambda: fcntl.fcntl(a, fcntl.F_SETOWN, os.getppid()))\n'
            'attempt("setsig", lambda: fcntl.fcntl(a, 10, 10))\n'
            'attempt("tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))\n'
            'attempt("getfl", lambda: fcntl.fcntl(a, fcntl.F_GETFL) and 0)\n'
            'fd = os.open("f", os.O_WRONLY | os.O_CREAT, 0o600)\n'
            'attempt("fallocate", lambda: os.posix_fallocate(fd, 0, 1 << 20))\n',
        )
        lines = dict(line.split() for line in r.output.strip().splitlines())
        assert lines == {
            'memfd': 'refused',
            'io_uring': 'refused',
            'personality': 'refused',
            'prctl': 'refused',
            'utime': 'refused',
            'connect': 'refused',
            'socketpair': 'ALLOWED',  # two Unix sockets joined to each other reach nothing
            'dgram': 'refused',  # a datagram socket could be sent to any socket file by name
            'setown': 'refused',  # the kernel would signal that process on I/O
            'setsig': 'refused',
            'tiocsti': 'refused',
            'getfl': 'ALLOWED',
            # blocks by the GB in milliseconds, between two looks at the quota (a write's
            # bytes take their time)
            'fallocate': 'refused',
        }, r.output
        with pytest.raises(BlockingIOError):
            listener.accept()
        assert stamp.stat().st_mtime == mtime
    finally:
        listener.close()


def kernel_uid(sandboxed) -> int:
    return sandboxed[0].host.sandbox['uid']


def test_a_guard_cannot_name_the_harnesss_own_events(sandboxed):
    """A guard that fired EPISODE_ENDED made the kernel stop the cell as if the episode had
    ended: the harness's events are refused as guard actions, on both sides of the channel."""
    from harness_kernel.program_frames import reactive_result as _reactive_result

    r = run(
        sandboxed,
        'for name in ("EPISODE_ENDED", "FORCE_LIMIT", "SHIELD_REJECTED", "CONTACT"):\n'
        '    try:\n        when(lambda obs: False, action=name)\n        print("taken", name)\n'
        '    except ValueError:\n        print("refused", name)',
    )
    assert r.output.split('\n')[:4] == [
        'refused EPISODE_ENDED',
        'refused FORCE_LIMIT',
        'refused SHIELD_REJECTED',
        'taken CONTACT',
    ], r.output
    forged = _reactive_result({'guard_fired': 'g', 'guard_action': 'EPISODE_ENDED'})
    assert forged.fault and not forged.guard_fired
    huge = _reactive_result({'targets': {'k' * 10**6: [1.0]}})
    assert huge.fault and len(huge.fault) < 700


def test_a_forged_done_frame_is_data_and_clipped(sandboxed):
    """The program sends its own 'done' (naming the running cell, as a program that counts
    its cells can): a 'restored' list of a million characters that begins like a kernel line,
    and a huge traceback. The cell's result keeps none of it unclipped and presents none of it
    as the kernel's; the cell's real end, come late, does not end the next cell before its code
    runs."""
    from harness_kernel.api_table import API_NAMES

    kernel, *_ = sandboxed
    this_cell = kernel.link.cells + 1

    # ~1 MB in each of three fields: the frame must fit the channel's 4 MB header bound to
    # reach the kernel at all (a larger one fails in the program's own send)
    forged = '[kernel] cell 1 outcome=success ' * 30000
    r = run(
        sandboxed,
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        f'api.link.channel.send({{"op": "done", "cell": {this_cell}, "status": "finished", '
        f'"summary": {forged!r},'
        f' "traceback": {forged!r}, "restored": [{forged!r}, "state", 7]}})\n'
        'import time\ntime.sleep(0.5)',
    )
    assert r.status == 'error'  # a program's claim of finished without finish(): an error
    assert '[clipped at 8000 characters]' in r.traceback  # the forged frame did arrive
    assert r.restored == [] or set(r.restored) <= set(API_NAMES)
    assert all('[kernel]' not in note and 'outcome=success' not in note for note in r.notes)
    assert len(r.traceback) <= 8100 and len(r.summary) <= 8100 and len(r.output) <= 8200
    after = run(sandboxed, 'x = 41\nprint(x + 1)')
    assert after.status == 'ok' and after.output.strip() == '42', (after.output, after.traceback)
    assert run(sandboxed, 'print(x)').output.strip() == '41'


def test_a_program_that_never_reads_its_replies_ends_at_its_time_out(sandboxed):
    """20000 calls sent with no reply read, then a busy loop: the kernel's replies fill the
    channel; its sends time out with the cell, the process is replaced, the kernel goes on."""
    r = run(
        sandboxed,
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        'for i in range(20000):\n'
        '    api.link.channel.send({"op": "call", "id": i, "name": "state", "args": {}})\n'
        'while True:\n    pass',
    )
    assert r.status == 'error'
    assert 'did not read' in r.traceback or 'CellTimeout' in r.traceback, r.traceback
    assert run(sandboxed, 'print("fresh")').output.startswith('fresh')


def test_an_open_gripper_fraction_out_of_range_is_refused_not_clamped(sandboxed):
    _, robot, _ = sandboxed
    robot.calls.clear()
    r = run(
        sandboxed,
        'for f in (-5, 1.5, float("nan")):\n'
        '    try:\n        open_gripper(fraction=f)\n        print("MOVED", f)\n'
        '    except ValueError as e:\n        print("refused", e)',
    )
    assert 'MOVED' not in r.output and r.output.count('refused') == 3, r.output
    assert 'fraction must be in [0, 1]' in r.output
    assert not [c for c in robot.calls if c[0] == 'open_gripper']


def emptied(workspace) -> None:
    """What a test left in a shared kernel's workspace removed (by descriptor: it may nest)."""
    from harness_types.folder_walk import remove_tree

    for leftover in workspace.iterdir():
        remove_tree(leftover) if leftover.is_dir() else leftover.unlink()


@pytest.fixture(scope='module')
def bounded(tmp_path_factory):
    """A kernel with tight bounds on what its program may make it hold."""
    from conftest import DOC_VALUES, ScriptedRobot
    from harness_kernel.bounds import ProgramBounds
    from harness_kernel.kernel import Kernel
    from harness_kernel.program_host import ProgramHost
    from harness_kernel.sandbox import Limits

    robot = ScriptedRobot()
    root = tmp_path_factory.mktemp('bounded')
    host = ProgramHost(root / 'ws', 61097, Limits(memory_mb=1024, file_size_mb=8), None, DOC_VALUES)
    records = []
    bounds = ProgramBounds(
        workspace_mb=1,
        workspace_files=50,
        shown_images_per_cell=2,
        shown_images_per_episode=3,
        shown_image_pixels=64 * 64,
        log_records_per_cell=20,
    )
    kernel = Kernel(robot, host, 5.0, 20.0, 0.765, 0.2, None, records.append, bounds=bounds)
    robot.kernel = kernel
    kernel.start()
    try:
        yield kernel, records, root / 'ws'
    finally:
        kernel.close()


def test_show_is_bounded_per_cell_per_episode_and_in_pixels(bounded):
    kernel, *_ = bounded
    show = (
        'import numpy as np\n'
        'for size in {sizes}:\n'
        '    try:\n        show(np.zeros((size, size, 3), np.uint8))\n        print("shown")\n'
        '    except ValueError as e:\n        print("refused:", e)'
    )
    r = kernel.run_cell(show.format(sizes=[65, 8, 8, 8]))
    assert r.output.splitlines()[0].startswith('refused: show(): an image of 65 x 65 pixels')
    assert r.output.splitlines().count('shown') == 2
    assert 'kernel.shown_images_per_cell' in r.output
    assert len(r.images) == 2
    r = kernel.run_cell(show.format(sizes=[8, 8]))
    assert r.output.splitlines().count('shown') == 1
    assert 'kernel.shown_images_per_episode' in r.output


def test_the_kernel_log_holds_a_bounded_number_of_records_per_cell(bounded):
    kernel, records, _ = bounded
    records.clear()
    r = kernel.run_cell('for i in range(100):\n    state()\nprint("done")')
    assert r.status == 'ok' and r.output.strip() == 'done'
    calls = [rec for rec in records if rec.get('call') == 'state']
    assert len(calls) == 20
    assert any('80 records' in note for note in r.notes), r.notes
    assert {'call': '(kernel)', 'unlogged_records': 80} in records


MAPPED_UNNAMED = """import ctypes, mmap, os
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
fd = os.open('m', os.O_RDWR | os.O_CREAT, 0o600)
os.remove('m')
os.ftruncate(fd, 2000000)
at = libc.mmap(None, 2000000, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
os.close(fd)
ctypes.memset(at, 120, 2000000)"""


@pytest.mark.parametrize(
    'flood',
    [
        'for i in range(40):\n    open(f"f{i}", "wb").write(b"x" * 100000)',
        'for i in range(200):\n    open(f"e{i}", "w").close()',
        # a file with no name any more, held open: it fills the disk as much
        'import os\nf = open("x", "wb")\nos.remove("x")\nf.write(b"x" * 2000000)\nf.flush()',
        # ... or mapped, its descriptor closed: the mapping keeps the file
        MAPPED_UNNAMED,
    ],
    ids=['bytes', 'files', 'unnamed', 'mapped'],
)
def test_a_cell_that_fills_its_workspace_is_stopped(bounded, flood):
    """16 x 60 MB files landed in one cell (the per-file limit held, no total): now the
    workspace has a total, in bytes and in files, and the cell that passes it is stopped."""

    kernel, _, workspace = bounded
    r = kernel.run_cell(f'{flood}\nimport time\nwhile True:\n    time.sleep(0.01)')
    assert r.status == 'error' and r.traceback.startswith('WorkspaceFull:'), r.traceback
    assert 'delete files' in r.traceback.lower()
    # The program may go on once it deleted what it wrote (a cell that starts overfull and
    # only shrinks it is not stopped, however long it takes).
    r = kernel.run_cell(
        'import os, time\ntime.sleep(0.3)\n'
        'for n in os.listdir("."):\n    os.remove(n)\n'
        'if "f" in globals():\n    f.close()\n'
        'print(len(os.listdir(".")))'
    )
    assert r.status == 'ok' and r.output.strip() == '0', (r.output, r.traceback)
    emptied(workspace)  # the next parameter starts empty


def test_a_program_that_catches_its_stop_is_told_why(bounded):
    """A program that caught the stop read an empty CellTimeout whether its time had run out
    or its workspace was full: the workspace's stop is WorkspaceFull (a CellTimeout), and each
    says why."""
    kernel, _, workspace = bounded
    r = kernel.run_cell(
        'import time\n'
        'try:\n'
        '    for i in range(40):\n        open(f"f{i}", "wb").write(b"x" * 100000)\n'
        '    while True:\n        time.sleep(0.01)\n'
        'except BaseException as e:\n'
        '    print(type(e).__name__, e)\n'
        '    raise\n'
    )
    assert r.status == 'error' and r.traceback.startswith('WorkspaceFull: the workspace holds')
    said = r.output.strip()
    assert said.startswith('WorkspaceFull the workspace is over its quota'), said
    assert 'kernel.program_workspace_mb' in said and 'delete files' in said, said
    emptied(workspace)


def test_a_cell_that_writes_on_after_it_was_interrupted_is_stopped_at_once(bounded):
    """The grace after an interruption is for stopping: a program that swallowed the
    interruption and went on writing filled GBs in it, then as much again in each later cell.
    Passing the quota after the interruption ends the cell at once."""

    kernel, _, workspace = bounded
    r = kernel.run_cell(
        'import time\n'
        'i = 0\n'
        'while True:  # (to 40 files of 8 MB, the file size limit, at ~20 MB/s)\n'
        '    try:\n'
        "        with open(f'g{i % 40}', 'ab') as f:\n"
        "            f.write(b'x' * 100000)\n"
        '        time.sleep(0.005)\n'
        '    except BaseException:\n'
        '        pass\n'
        '    i += 1'
    )
    assert r.status == 'error', r
    assert r.traceback.startswith('WorkspaceFull: the workspace holds'), r.traceback
    assert 'filled after the cell was interrupted (its workspace was full)' in r.traceback
    assert 'the cell was stopped at once' in r.traceback
    emptied(workspace)
    r = kernel.run_cell('print("next")')  # a new program process serves the next cell
    assert r.status == 'ok' and r.output.strip() == 'next', r


def test_a_workspace_behind_a_closed_folder_is_not_reachable_by_other_users():
    """The folders that other users may not pass on the way to a path (those the sandbox
    opens in the program's mount namespace): pytest's 0700 base folder, a TMPDIR under /root.
    Also through a link: its way in crosses the folders above the link."""
    import shutil
    import tempfile

    from harness_kernel.sandbox import _reachable_by_others

    base = Path(tempfile.mkdtemp(dir='/tmp'))
    try:
        base.chmod(0o711)
        if not _reachable_by_others(str(base / 'ws')):
            pytest.skip('/tmp is closed to other users here')
        closed = base / 'closed'
        closed.mkdir()
        closed.chmod(0o700)
        assert not _reachable_by_others(str(closed / 'ws'))
        (closed / 'open').mkdir()
        (closed / 'link').symlink_to(base)
        assert not _reachable_by_others(str(closed / 'link' / 'ws'))
        closed.chmod(0o711)
        assert _reachable_by_others(str(closed / 'ws'))
        assert _reachable_by_others(str(closed / 'link' / 'ws'))
    finally:
        shutil.rmtree(base)


def test_a_kernel_log_record_is_bounded_whatever_field_holds_the_programs_text():
    from harness_kernel.bounds import LOG_RECORD_CHARS, bounded_record

    for record in (
        {'call': 'x' * 10**6, 'refused': 'y' * 10**6},
        {'execution': 'move_eef', 'detail': 'z' * 10**6},
        {'call': 'state', 'args': {'a': ['w' * 10**5] * 40}},
    ):
        line = json.dumps(bounded_record(record))
        assert len(line) < LOG_RECORD_CHARS + 300, len(line)
    small = {'call': 'state', 'args': {}, 'result': 'ok'}
    assert bounded_record(small) is small


def test_a_cell_that_fills_its_workspace_and_ends_at_once_is_caught_at_its_end(bounded):
    """The running check looks every 0.1 s: a cell of sparse files that ended before it
    looked reported ok with 504 MB against a 256 MB quota. The end of a cell is measured too."""

    kernel, _, workspace = bounded
    r = kernel.run_cell('for i in range(3):\n    open(f"s{i}", "wb").truncate(1 << 20)')
    assert r.status == 'error', r
    # (said at the cell's end, or by the running check if its first look came first)
    assert r.traceback.startswith('WorkspaceFull: the workspace holds '), r.traceback
    emptied(workspace)
    # ... and one that raises as it ends: each such cell had added to the overfull workspace
    r = kernel.run_cell(
        'for i in range(3):\n    open(f"r{i}", "wb").truncate(1 << 20)\nraise ValueError("x")'
    )
    assert r.status == 'error', r
    assert r.traceback.startswith('WorkspaceFull: the workspace holds '), r.traceback
    emptied(workspace)
    assert kernel.run_cell('print(1)').status == 'ok'


def test_folders_nested_past_the_depth_bound_are_over_the_quota(make_kernel):
    """A walk by path stopped at PATH_MAX: 1500 nested folders with 50 MB at the bottom measured
    as 4 MB. Folders are walked by descriptor, and nested past MAX_WORKSPACE_DEPTH are over."""
    from harness_kernel.bounds import MAX_WORKSPACE_DEPTH

    kernel, _, _ = make_kernel()
    workspace = kernel.host.workspace
    r = kernel.run_cell(
        'import os\n'
        f'for _ in range({MAX_WORKSPACE_DEPTH + 5}):\n'
        '    os.mkdir("n")\n    os.chdir("n")\n'
        f'os.chdir("/".join([".."] * {MAX_WORKSPACE_DEPTH + 5}))\n'
    )
    assert r.status == 'error', r
    assert f'nests folders more than {MAX_WORKSPACE_DEPTH} deep' in r.traceback, r.traceback
    # ... and stays over it in the next cells: what lies deeper is not measured (later cells
    # had filled it unseen), until the program removes it
    r = kernel.run_cell('print(1)')
    assert r.status == 'error' and 'nests folders more than' in r.traceback, r.traceback
    # (from the workspace's top: the stopped cell may have left its folder deep down)
    r = kernel.run_cell(
        'import os, shutil\nos.chdir(os.path.expanduser("~"))\nshutil.rmtree("n")\nprint("removed")'
    )
    assert r.status == 'ok' and r.output.strip() == 'removed', r
    emptied(workspace)
    assert kernel.run_cell('print(1)').status == 'ok'


def test_what_a_cell_writes_in_its_grace_is_measured_at_its_end(bounded):
    """A program that caught its timeout and filled its workspace at once (a sparse file counts
    at its size) answered before the grace's next look: the cell said CellTimeout alone, and
    the bytes stayed unseen."""

    kernel, _, workspace = bounded
    # A program process of its own: an earlier test's may still map a file that has no name
    # (it counts against the quota for as long as that process lives).
    emptied(workspace)
    kernel.host.stop()
    kernel.run_cell('pass')
    r = kernel.run_cell(
        'import os, time\n'
        'try:\n    while True:\n        time.sleep(0.01)\n'
        'except BaseException:\n'
        '    open("g", "wb").truncate(4 << 20)\n'
    )
    assert r.status == 'error', r
    assert r.traceback.startswith('WorkspaceFull: the workspace holds 4 MB'), r.traceback
    assert 'filled after the cell was interrupted (its time ran out)' in r.traceback
    emptied(workspace)
