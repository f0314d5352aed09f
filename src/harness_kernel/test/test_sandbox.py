"""The program process holds a hostile program: each attack a test, each one contained, and
the kernel (this process) goes on. The kernel core runs here with a scripted robot; the
program runs in its real sandbox."""

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
        'api = state.__wrapped__.__self__\n'
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
        'api = state.__wrapped__.__self__\n'
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
            'api = state.__wrapped__.__self__\n'
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


def test_a_workspace_behind_a_closed_folder_is_not_reachable_by_other_users():
    """Root hands the program an unprivileged uid only when that uid can enter the workspace:
    a folder above it that others may not pass (pytest's 0700 base folder, a TMPDIR under
    /root) keeps uid 0 without capabilities instead of failing every program's start. Also
    through a link: its way in crosses the folders above the link."""
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
