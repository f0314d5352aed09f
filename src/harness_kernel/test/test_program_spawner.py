"""The program spawner forks each program process: a child sees nothing of the spawner or of
the programs before it, and dies with the spawner."""

import os
import signal
import threading
import time

import pytest
from conftest import DOC_VALUES, ScriptedRobot
from harness_kernel.kernel import Kernel
from harness_kernel.program_host import ProgramHost, program_environment
from harness_kernel.program_spawner import CHANNEL_FD, Spawner
from harness_kernel.sandbox import Limits


def gone(pid: int) -> bool:
    """`pid` ended (a zombie that no one reaped yet counts as ended)."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except FileNotFoundError:
        return True


@pytest.fixture
def spawner():
    made = Spawner(program_environment(None))
    yield made
    made.close()


@pytest.fixture
def start(tmp_path, spawner):
    """start(name): a kernel core whose program process `spawner` forked, in workspace `name`."""
    kernels = []

    def make(name='ws'):
        robot = ScriptedRobot()
        uid = 61090 + len(kernels) % 2  # successive programs' uids differ, as a station's do
        host = ProgramHost(tmp_path / name, uid, Limits(), None, DOC_VALUES, spawner)
        kernel = Kernel(robot, host, 5.0, 20.0, 0.765, 0.2, None, lambda _r: None)
        robot.kernel = kernel
        kernel.start()
        kernels.append(kernel)
        return kernel

    yield make
    for kernel in kernels:
        kernel.close()


def test_the_spawner_interpreter_starts_once(start, spawner):
    # The ROS wheels' .pth hook starts a Python without its guard variable again, with the ROS
    # libraries on LD_LIBRARY_PATH (~20 ms): the spawner's environment has the guard, so the
    # environment it was started with is the one it runs with.
    start()
    with open(f'/proc/{spawner.process.pid}/environ', 'rb') as environ:
        names = {entry.split(b'=', 1)[0] for entry in environ.read().split(b'\0') if entry}
    assert b'LD_LIBRARY_PATH' not in names, names


def test_a_child_holds_only_its_own_descriptors(start):
    kernel = start()
    r = kernel.run_cell(
        'import os\n'
        'def is_open(fd):\n'
        '    try:\n        os.fstat(fd)\n        return True\n'
        '    except OSError:\n        return False\n'
        'print(sorted(fd for fd in range(1024) if is_open(fd)))'
    )
    # stdin, stdout, stderr and the channel: not the spawner's socket or its wake-up pipe
    assert r.output.strip() == str([0, 1, 2, CHANNEL_FD]), r.output


def test_a_child_starts_where_a_started_process_would(start, tmp_path):
    kernel = start('here')
    r = kernel.run_cell(
        'import os, sys\nprint(os.getcwd(), os.environ["HOME"], sys.path[0], sys.argv)'
    )
    workspace = str(tmp_path / 'here')
    assert r.output.split() == [workspace, workspace, workspace, "['harness-program']"], r.output


def test_successive_children_share_nothing(start):
    first = start('one')
    assert first.run_cell('secret = 42\nprint(secret)').output.strip() == '42'
    first.close()
    second = start('two')
    r = second.run_cell("print('secret' in globals())")
    assert r.output.strip() == 'False', r.output
    assert second.host.pid != first.host.pid


def test_the_exit_is_reported_by_the_spawner(start):
    kernel = start()
    host = kernel.host
    pid = host.pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while host.alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not host.alive()
    assert host.exit_description() == 'killed by SIGKILL'


def test_children_die_with_the_spawner_and_a_new_one_serves(start, spawner):
    kernel = start('a')
    pid = kernel.host.pid
    spawner.process.kill()
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(pid)  # PR_SET_PDEATHSIG
    assert not kernel.host.alive()
    # the model is told whose fault it was: not its program's
    assert kernel.host.exit_description() == (
        "the kernel's program spawner died (killed by SIGKILL) and ended it: a fault of the "
        'station, not of the program'
    )
    again = start('b')  # the spawner is started again
    assert again.run_cell('print(6 * 7)').output.strip() == '42'


def test_packages_a_program_plants_are_not_what_its_next_process_imports(start, tmp_path):
    kernel = start('planted')
    kernel.run_cell(
        'import os\n'
        "for name in ('harness_kernel', 'numpy'):\n"
        '    os.makedirs(name, exist_ok=True)\n'
        "    open(f'{name}/__init__.py', 'w').write('raise SystemExit(\"planted\")')\n"
        'os.kill(os.getpid(), 9)'
    )
    r = kernel.run_cell(
        'import harness_kernel, numpy\nprint(harness_kernel.__file__, numpy.__file__)'
    )
    assert 'planted' not in r.output and str(tmp_path) not in r.output, r.output
    assert r.status == 'ok', r.output
    # its own modules are importable once it is sandboxed
    r = kernel.run_cell("open('mine.py', 'w').write('X = 5')\nimport mine\nprint(mine.X)")
    assert r.output.strip().endswith('5'), r.output


def test_each_program_draws_its_own_random_numbers(start):
    draws = []
    for name in ('one', 'two'):
        kernel = start(name)
        code = (
            'import numpy as np, random\nprint(np.random.randint(1 << 30), random.getrandbits(30))'
        )
        draws.append(kernel.run_cell(code).output.split())
        kernel.close()
    assert draws[0][0] != draws[1][0] and draws[0][1] != draws[1][1], draws


def test_threads_polling_one_ended_program_all_get_its_exit(start):
    """The cell's thread and the reactive lane poll the same program: when it dies, each
    learns how at once (one of them took the spawner's only report of it)."""
    kernel = start()
    process = kernel.host.process
    answers, ready = [], threading.Barrier(3)

    def poll_until_ended():
        ready.wait()
        while process.poll() is None:
            pass
        answers.append((process.returncode, kernel.host.exit_description()))

    threads = [threading.Thread(target=poll_until_ended) for _ in range(2)]
    for t in threads:
        t.start()
    ready.wait()
    kernel.host.thaw()  # (frozen between cells: only SIGKILL would end it now, the fallback)
    os.kill(process.pid, signal.SIGTERM)
    for t in threads:
        t.join(timeout=30)
    assert answers == [(-signal.SIGTERM, 'killed by SIGTERM')] * 2


def test_a_program_of_a_spawner_that_was_replaced_ends_without_waiting(start, spawner):
    first = start('a')
    process = first.host.process
    spawner.process.kill()  # its children die with it
    # a new spawner (the one killed, maybe not ended yet, is not asked), which knows nothing
    # of the first one's children
    assert start('b').run_cell('print(6 * 7)').output.strip() == '42'
    while not process._ended():
        time.sleep(0.01)
    # nothing to wait for from the new spawner: at once, not after the report's time limit
    assert spawner.exit_code(process.pid, process.sock) == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL


def test_a_closed_spawner_refuses_a_spawn_with_its_own_error(spawner):
    from harness_kernel.program_spawner import SpawnerError

    spawner.close()
    r, w = os.pipe()
    try:
        with pytest.raises(SpawnerError, match='closed'):
            spawner.spawn({}, {}, r, w)
    finally:
        os.close(r)
        os.close(w)


def test_a_programs_standard_streams_are_its_pipe_not_the_spawners(start):
    kernel = start()
    r = kernel.run_cell(
        'import sys\nprint(sys.stdout.seekable(), sys.stderr.seekable(), sys.stdin.read())\n'
        'print(sys.stdout is sys.__stdout__, sys.stdout.encoding)'
    )
    assert r.output.split() == ['False', 'False', 'True', 'utf-8'], r.output
