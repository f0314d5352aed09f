"""Fault injection: kill or stop a part of a running episode (`harness run` as its own
process, the real graph, the stand-in model service) and check that the episode ends with
the right status, a complete run folder, and no process of it left."""

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from harness_bringup.program_workspace import NOTE
from harness_bringup.supervisor import SUPERVISED_FOLDER
from harness_types.process import owned_dds_segments
from messages_server import MessagesServer
from process_tree import descendants, processes, program_processes

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / 'config' / 'harness.yaml')
BUSY = "<python>\nprint('working')\nn = 0\nwhile True:\n    n += 1\n</python>"
LOOK = "<python>\nprint(len(locate('')))\n</python>"
FINISH = '<finish>done</finish>'
FAST_DDS = pytest.mark.skipif(
    not os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps')
    or not Path('/dev/shm').is_dir(),
    reason="the shared-memory segments checked are Fast DDS's, in /dev/shm",
)


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError('timed out waiting')


def start(tmp_path, server, *flags, session=False):
    """`harness run` as its own process; with `session`, in a process group of its own (a
    terminal's Ctrl-C reaches every process of the group: os.killpg)."""
    env = dict(os.environ, ANTHROPIC_API_KEY='test-key', ANTHROPIC_BASE_URL=server.url)
    return subprocess.Popen(
        [
            sys.executable,
            '-m',
            'harness_bringup.cli',
            '--config',
            CONFIG,
            'run',
            'lift_cube',
            '--model',
            'claude-sonnet-5-5',
            '--out',
            str(tmp_path),
            *flags,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=session,
    )


def finished(proc, tmp_path):
    out, _ = proc.communicate(timeout=120)
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(x) for x in (folder / 'events.jsonl').read_text().splitlines()]
    assert events[-1]['type'] == 'end' and events[-1]['status'] == summary['status']
    return proc.returncode, summary, events, folder, out


def the_one(proc, marker):
    def find():
        hits = [p for p, cmd in descendants(proc.pid).items() if marker in cmd]
        return hits[0] if hits else None

    return wait_for(find)


def no_process_left(proc):
    assert wait_for(lambda: not descendants(proc.pid) or None, timeout=20) is None or True
    left = {p: c for p, c in descendants(proc.pid).items()}
    assert not left, left


def test_the_program_process_killed_mid_cell(tmp_path):
    with MessagesServer([BUSY, FINISH]) as server:
        proc = start(tmp_path, server)
        (program,) = wait_for(lambda: program_processes(proc.pid))
        wait_for(lambda: len(server.requests) >= 1)
        time.sleep(1.0)  # the busy cell runs
        os.kill(program, signal.SIGKILL)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 0 and summary['status'] == 'finished', out
    (cell,) = [e for e in events if e['type'] == 'cell']
    assert cell['status'] == 'error' and 'killed by SIGKILL' in cell['traceback']
    assert 'variables of earlier cells are lost' in cell['traceback']
    no_process_left(proc)
    # what a supervisor would count of its calls from its events is what the driver counted
    from harness_driver.budgets import usage_of_events

    counted = usage_of_events(events)
    assert counted['model_calls'] == 2 and counted == {k: summary[k] for k in counted}


def test_the_kernel_killed_is_noticed_at_once(tmp_path):
    with MessagesServer([BUSY, FINISH]) as server:
        proc = start(tmp_path, server)
        kernel = the_one(proc, 'harness_kernel.kernel_node')
        wait_for(lambda: len(server.requests) >= 1)
        time.sleep(1.0)
        os.kill(kernel, signal.SIGKILL)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 1 and summary['status'] == 'error', out
    # Noticed as the process's end, not after the 900 s a cell may wait (that says timeout).
    assert 'the kernel process ended (killed by signal 9' in summary['detail']
    assert (folder / 'kernel.log').is_file() and (folder / 'summary.json').is_file()
    no_process_left(proc)


def test_the_driver_killed_leaves_a_summary_from_the_supervisor(tmp_path):
    """The worker and skill server run in the driver's process: killing it kills them. The
    files the program wrote are moved into the run folder by the supervisor, and no folder of
    the program is left behind. What killed participants leave in /dev/shm is removed by the
    supervisor before the next episode starts: here a planted one, as an earlier killed
    episode leaves it."""
    planted = dead_segment()
    writes = BUSY.replace("print('working')", "open('notes.txt', 'w').write('kept')")
    with MessagesServer([writes, FINISH]) as server:
        proc = start(tmp_path, server)
        driver = wait_for(
            lambda: (
                [
                    p
                    for p, (pp, c) in processes().items()
                    if pp == proc.pid and 'harness_bringup.cli' in c
                ]
                or None
            )
        )[0]
        program_folder = wait_for(lambda: program_folder_of(tmp_path))
        wait_for(lambda: (program_folder / 'notes.txt').exists())
        os.kill(driver, signal.SIGKILL)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 1 and summary['status'] == 'error' and summary['written_by'] == 'supervisor'
    assert 'killed by SIGKILL' in summary['detail']
    no_process_left(proc)
    assert (folder / 'workspace' / 'notes.txt').read_text() == 'kept'
    assert not program_folder.exists() and not (folder / NOTE).exists()
    assert not any(p.exists() for p in planted), out


def test_the_driver_killed_while_a_model_call_is_out_counts_that_call(tmp_path):
    """The request was sent and never answered: the supervisor's summary counts it (a service
    may bill it), and the report shows it as not answered."""
    from messages_server import Scripted

    with MessagesServer([Scripted(FINISH, delay=30.0)]) as server:
        proc = start(tmp_path, server)
        wait_for(lambda: server.requests or None)
        (driver,) = [
            p for p, (pp, c) in processes().items() if pp == proc.pid and 'harness_bringup.cli' in c
        ]
        os.kill(driver, signal.SIGKILL)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 1 and summary['written_by'] == 'supervisor', out
    assert summary['model_calls'] == 0 and summary['model_requests_unanswered'] == 1
    assert summary['decisions']['start'] == 1 and summary['request_characters'] > 0
    assert 'still out when the episode process ended' in (folder / 'report.html').read_text()
    no_process_left(proc)


def test_a_hung_episode_process_is_killed_at_its_deadline(tmp_path):
    """An episode process stopped (SIGSTOP) as its episode begins enforces none of its budgets:
    the supervisor kills it once the episode's max_wall_seconds and the overrun allowance have
    passed, and closes its run folder."""
    from harness_bringup.episode_deadline import EpisodeDeadline
    from harness_bringup.supervisor import supervised

    folder = tmp_path / 'run'
    base = {'task': 'lift_cube', 'layout': 0, 'seed': 0, 'model': 'scripted'}
    argv = ['--config', CONFIG, 'run', 'lift_cube', '--model', 'scripted', '--out', str(tmp_path)]
    stopped = []

    def stop_when_the_episode_begins() -> None:
        wait_for(lambda: (folder / 'params.yaml').is_file(), timeout=300)
        children = [p for p, c in descendants(os.getpid()).items() if 'harness_bringup.cli' in c]
        group = os.getpgid(children[0])
        os.killpg(group, signal.SIGSTOP)
        stopped.append(children[0])
        # (not killed in 120 s: resumed, so that the test fails rather than hangs)
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not processes().get(children[0]), timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGCONT)

    stopper = threading.Thread(target=stop_when_the_episode_begins, daemon=True)
    stopper.start()
    with open(tmp_path / 'harness.log', 'w') as output:
        code = supervised(
            folder,
            base,
            [*argv, '--max-wall-seconds', '1'],
            output,
            # bounds of the test's own (1 s, nothing past it: the run's timeouts allow minutes)
            deadline=EpisodeDeadline(300, 2, lambda p, _task: (1.0, 0.0) if p.is_file() else None),
        )
    stopper.join(timeout=5)
    assert stopped
    said = (tmp_path / 'harness.log').read_text()
    summary = json.loads((folder / 'summary.json').read_text())
    assert code == 1 and summary['status'] == 'error' and summary['written_by'] == 'supervisor'
    assert 'killed by SIGKILL: the supervisor took it for hung' in summary['detail'], said
    assert 'max_wall_seconds (1 s), 0 s its driver may run past them' in summary['detail']
    assert 'the supervisor took it for hung and killed it' in said
    events = (folder / 'events.jsonl').read_text().splitlines()
    assert json.loads(events[-1])['type'] == 'end'
    assert not [c for c in descendants(os.getpid()).values() if 'harness' in c]


def program_folder_of(runs: Path) -> Path | None:
    """The program's folder of the one episode under `runs`, once its run folder notes it."""
    notes = list(runs.glob(f'*/{NOTE}'))
    text = notes[0].read_text().strip() if notes else ''
    return Path(text) if text else None


def dead_segment() -> list[Path]:
    """A segment and lock file in /dev/shm as an ended participant leaves them (unlocked, older
    than a sweep's minimum age), under a random name no participant has."""
    if not Path('/dev/shm').is_dir():
        return []
    segment = Path('/dev/shm') / f'fastdds_{secrets.token_hex(8)}'
    lock = segment.with_name(segment.name + '_el')
    segment.write_bytes(b'\0' * 4096)
    lock.touch()
    old = time.time() - 1000
    os.utime(lock, (old, old))
    return [segment, lock]


@FAST_DDS
def test_an_episode_leaves_no_shared_memory(tmp_path):
    """Every process of an episode (the episode's, its kernel, its recorder) deletes its DDS
    participant before it ends, so none leaves its segment in /dev/shm. Run without the
    supervisor, whose sweep would hide a leak."""
    folder, log = tmp_path / 'run', tmp_path / 'episode.out'
    with open(log, 'w') as output:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'harness_bringup.cli', '--config', CONFIG, 'run']
            + ['lift_cube', '--model', 'scripted', '--out', str(tmp_path)],
            env=dict(os.environ, **{SUPERVISED_FOLDER: str(folder)}),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    owned = set()

    def episode_processes():
        return [p for p in processes() if p == proc.pid or _session(p) == proc.pid]

    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            for pid in episode_processes():
                owned |= owned_dds_segments(pid)
            time.sleep(0.05)
        assert proc.returncode == 0, log.read_text()
        wait_for(lambda: not episode_processes(), timeout=20)
        assert len(owned) >= 3, owned  # the episode process, the kernel, the recorder
        assert [s for s in owned if s.exists()] == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for segment in owned:  # a leak found is not left to fill the machine
            segment.unlink(missing_ok=True)
            segment.with_name(segment.name + '_el').unlink(missing_ok=True)


def _session(pid):
    try:
        return os.getsid(pid)
    except OSError:
        return None


@pytest.mark.parametrize('how', [signal.SIGKILL, signal.SIGSTOP])
def test_the_recorder_killed_or_stopped_makes_an_incomplete_bag(tmp_path, how):
    with MessagesServer([LOOK, FINISH]) as server:
        proc = start(tmp_path, server)
        recorder = the_one(proc, 'harness_recording.recorder_node')
        os.kill(recorder, how)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 0 and summary['status'] == 'finished', out
    assert summary['bag_incomplete'] is True and 'bag' not in summary
    assert 'the bag is incomplete' in summary['bag_error']
    no_process_left(proc)


def test_the_model_service_stopped_mid_episode(tmp_path):
    server = MessagesServer([LOOK])
    with server:
        proc = start(tmp_path, server, '--max-wall-seconds', '20')
        wait_for(lambda: len(server.requests) >= 1)
    # The service is gone: the next model call fails.
    code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 1 and summary['status'] in ('model_service_failed', 'error'), summary
    assert 'model' in summary['detail']
    no_process_left(proc)


def test_ctrl_c_during_start_up(tmp_path):
    with MessagesServer([FINISH]) as server:
        proc = start(tmp_path, server)
        wait_for(lambda: list(tmp_path.glob('*/events.jsonl')) or None)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)  # a second, impatient one
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 130 and summary['status'] == 'interrupted', out
    assert 'Traceback' not in out
    no_process_left(proc)


def test_a_terminals_ctrl_c_during_start_up_is_summarised_by_the_episode(tmp_path):
    """A terminal's Ctrl-C reaches every process of the group: only the supervisor wrote
    summary.json then. The episode process writes it itself, with no traceback anywhere."""
    with MessagesServer([FINISH]) as server:
        proc = start(tmp_path, server, session=True)
        wait_for(lambda: list(tmp_path.glob('*/events.jsonl')) or None)
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 130 and summary['status'] == 'interrupted', out
    assert 'written_by' not in summary, summary  # the episode's own, not the supervisor's
    assert 'Traceback' not in out and 'KeyboardInterrupt' not in out, out
    assert (folder / 'report.html').stat().st_size > 0
    no_process_left(proc)


def test_a_ctrl_c_during_a_model_call_says_the_call_was_not_answered(tmp_path):
    from messages_server import Scripted

    with MessagesServer([Scripted(FINISH, delay=30.0)]) as server:
        proc = start(tmp_path, server, session=True)
        wait_for(lambda: server.requests or None)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 130 and summary['status'] == 'interrupted', out
    assert summary['model_calls'] == 0 and summary['model_requests_unanswered'] == 1
    assert '0 model calls (start 1; 1 of them asked, not answered)' in out, out
    (asked,) = [e for e in events if e['type'] == 'model_request']
    assert asked['answered'] is False and asked['why'] == 'interrupted'
    assert summary['bag'] == 'bag' and (folder / 'bag' / 'metadata.yaml').is_file()
    assert 'Traceback' not in out, out
    no_process_left(proc)


def test_ctrl_c_mid_cell_closes_the_bag_with_everything_up_to_it(tmp_path):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    with MessagesServer([BUSY, FINISH]) as server:
        proc = start(tmp_path, server)
        wait_for(lambda: len(server.requests) >= 1)
        time.sleep(1.0)  # the busy cell runs
        proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C: the supervisor forwards it
        code, summary, events, folder, out = finished(proc, tmp_path)
    assert code == 130 and summary['status'] == 'interrupted', out
    assert summary.get('bag') == 'bag' and 'bag_error' not in summary, summary
    store = get_typestore(Stores.ROS2_KILTED)
    with Reader(folder / 'bag') as bag:
        lines = [
            store.deserialize_cdr(raw, c.msgtype).data
            for c, _, raw in bag.messages()
            if c.topic == '/harness/events'
        ]
        counts = {c.topic: c.msgcount for c in bag.connections}
    # Every event line, the interrupted end included; the motion up to the interrupt.
    assert lines == (folder / 'events.jsonl').read_text().splitlines()
    assert json.loads(lines[-1])['status'] == 'interrupted'
    assert counts['/joint_states'] >= 1
    # the program that was running is kept (the kernel's result of it never came)
    (cut,) = [e for e in events if e['type'] == 'cell_interrupted']
    assert cut['call'] == 1 and 'while' in cut['code'], cut
    report = (folder / 'report.html').read_text()
    assert 'a Ctrl-C cut this cell as it ran' in report
    no_process_left(proc)


def test_two_episodes_side_by_side_cannot_reach_each_other(tmp_path):
    """Each program looks for the other episode every way it can and tries to stop it: signals
    and prlimit64 (RLIMIT_FSIZE=1 on the kernel node stopped its log and failed every later
    cell) on every process, a datagram to DDS."""
    probe = (
        '<python>\nimport os, resource, socket, signal\nfound = []\n'
        "for path in ['/proc', '/tmp', '/dev/shm', os.path.expanduser('~/..')]:\n"
        '    try:\n        found.append((path, len(os.listdir(path))))\n'
        '    except OSError as e:\n        found.append((path, e.errno))\n'
        'for pid in set(range(2, 4000)) - {os.getpid()}:\n    try:\n'
        '        os.kill(pid, signal.SIGSTOP)\n'
        "        found.append(('signalled', pid))\n    except OSError:\n        pass\n"
        '    try:\n        resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, 1))\n'
        "        found.append(('limited', pid))\n    except OSError:\n        pass\n"
        "try:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', "
        "('127.0.0.1', 7400))\n    found.append('sent')\nexcept OSError as e:\n"
        "    found.append(('udp', e.errno))\nprint(found, os.getcwd())\n</python>"
    )
    runs = []
    with MessagesServer([probe, FINISH]) as one, MessagesServer([probe, FINISH]) as other:
        for k, server in enumerate((one, other)):
            (tmp_path / str(k)).mkdir()
            runs.append(start(tmp_path / str(k), server))
        results = [finished(p, tmp_path / str(k)) for k, p in enumerate(runs)]
    for code, summary, events, _folder, out in results:
        assert code == 0 and summary['status'] == 'finished', out
        (cell,) = [e for e in events if e['type'] == 'cell']
        assert "'signalled'" not in cell['output'] and "'sent'" not in cell['output']
        assert "'limited'" not in cell['output']
        assert "('/proc', 13)" in cell['output'] and "('/tmp', 13)" in cell['output']
        # The program's folder says nothing of the task, layout or seed.
        assert 'lift_cube' not in cell['output'] and '-l0-s0' not in cell['output']
    for proc in runs:
        no_process_left(proc)


def test_many_short_executions_under_cpu_load_all_end(tmp_path):
    """A transfer cell hung on a held-out bench under load: the motion ended on the skill
    server and the kernel waited for a result that never came. 300 short executions, with
    two busy processes taking the cores, each get their result (a lost one is asked for
    again) and the cell ends well inside its time."""
    program = (
        '<python>\nevents = []\nfor k in range(150):\n'
        '    events.append(home().event)\n'
        '    events.append(run_controller(lambda obs: {}, until=lambda obs: True).event)\n'
        'print(len(events), sorted(set(events)))\n</python>'
    )
    burners = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(2)]
    try:
        with MessagesServer([program, FINISH]) as server:
            proc = start(tmp_path, server)
            code, summary, events, _folder, out = finished(proc, tmp_path)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert code == 0 and summary['status'] == 'finished', out
    (cell,) = [e for e in events if e['type'] == 'cell']
    assert cell['status'] == 'ok', cell
    assert cell['output'].startswith('300 '), cell['output']
