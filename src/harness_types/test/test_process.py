"""How an episode's processes leave: one that leaves the ROS graph with `leave_graph` and then
`leave` (no interpreter teardown) deletes its DDS participant (its shared-memory segment is
gone from /dev/shm), and one started with `die_with_parent` ends with its parent process."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from harness_types.process import leave_graph, owned_dds_segments

# A node with what rclpy's destroy_node leaves alive (an action client and an action server)
# and what it destroys (a publisher, a subscription), then the way out under test.
PARTICIPANT = textwrap.dedent(
    """
    import json, os, sys
    import rclpy
    from rclpy.action import ActionClient, ActionServer
    from rclpy.node import Node
    from std_msgs.msg import String
    from harness_msgs.action import RunCell
    from harness_types.process import leave, leave_graph, owned_dds_segments

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(sys.argv[2]))
    node = Node('leave_graph_test', context=context)
    node.create_publisher(String, 'chatter', 10)
    node.create_subscription(String, 'chatter', lambda _m: None, 10)
    ActionClient(node, RunCell, 'run_cell')
    ActionServer(node, RunCell, 'run_cell', lambda _g: None)
    print(json.dumps(sorted(map(str, owned_dds_segments(os.getpid())))), flush=True)
    if sys.argv[1] == 'leave_graph':
        leave_graph([node], context)
    elif sys.argv[1] == 'destroy_node':  # what the harness's processes did before
        node.destroy_node()
        context.try_shutdown()
        context.destroy()
    leave(0)
    """
)


def _segments_left(way: str) -> tuple[list[str], list[str]]:
    """The segments the participant owned, and those of them still in /dev/shm after it left.
    Its domain is below the ids the harness claims (100-232), so no test's graph sees it."""
    done = subprocess.run(
        [sys.executable, '-c', PARTICIPANT, way, str(90 + os.getpid() % 10)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    owned = json.loads(done.stdout.splitlines()[-1])
    left = [s for s in owned if Path(s).exists()]
    for s in left:  # the control case's leak is not left for others
        for path in (Path(s), Path(s + '_el')):
            path.unlink(missing_ok=True)
    return owned, left


FAST_DDS = pytest.mark.skipif(
    not os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps')
    or not Path('/dev/shm').is_dir(),
    reason="the shared-memory segments checked are Fast DDS's, in /dev/shm",
)


@FAST_DDS
def test_leave_graph_deletes_the_participant_and_its_shared_memory():
    owned, left = _segments_left('leave_graph')
    assert owned, 'the participant owned no shared-memory segment: Fast DDS without SHM?'
    assert left == []


@FAST_DDS
def test_destroying_the_node_alone_left_the_segment():
    """The control: rclpy's destroy_node keeps the participant while action entities live."""
    owned, left = _segments_left('destroy_node')
    assert owned
    if not left:
        pytest.skip("this rclpy's destroy_node destroys action entities: nothing to control")
    assert left == owned


def test_owned_dds_segments_of_a_process_without_a_participant_or_gone():
    assert owned_dds_segments(os.getpid()) == set()
    assert owned_dds_segments(2**22 + 12345) == set()  # above pid_max: no such process


# A parent that starts a child (which dies with its parent) from a thread, lets that thread
# end, says whether the child outlived the thread, and ends without stopping the child.
PARENT = textwrap.dedent(
    """
    import subprocess, sys, threading, time
    children = []
    def start():
        child = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == 'watching\\n'
        children.append(child)
    starter = threading.Thread(target=start)
    starter.start()
    starter.join()
    time.sleep(1.0)
    print(children[0].pid, children[0].poll() is None, flush=True)
    """
)
CHILD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from harness_types.process import die_with_parent
    def ended(*_):
        Path(sys.argv[1]).write_text('terminated')
        sys.exit(0)
    signal.signal(signal.SIGTERM, ended)
    die_with_parent()
    print('watching', flush=True)
    time.sleep(60)
    """
)


def test_a_child_dies_with_its_parent_process_not_with_the_thread_that_started_it(tmp_path):
    marker = tmp_path / 'ended'
    done = subprocess.run(
        [sys.executable, '-c', PARENT, CHILD, str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pid, alive = done.stdout.split()
    assert alive == 'True'  # the thread that started it ended a second before
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == 'terminated'  # its SIGTERM handler ran: an orderly end


def test_a_child_whose_named_parent_is_gone_ends_at_once(tmp_path):
    """Its parent ended before it called die_with_parent (it was reparented): the pid its
    starter named is not its parent's, so it ends at once, and its own children do not
    inherit the name."""
    marker = tmp_path / 'ended'
    env = dict(os.environ, HARNESS_PARENT_PID=str(2**22 + 12345))  # no such process
    child = subprocess.run(
        [sys.executable, '-c', CHILD, str(marker)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 0 and marker.read_text() == 'terminated', child.stderr
    assert 'watching' not in child.stdout


def test_leave_graph_tries_every_step_and_raises_the_first_error():
    class Node:
        def __init__(self, fails: bool) -> None:
            self.fails, self.destroyed, self.waitables = fails, False, []

        def destroy_node(self) -> None:
            self.destroyed = True
            if self.fails:
                raise RuntimeError('first node')

    class Context:
        ended = destroyed = False

        def try_shutdown(self) -> None:
            self.ended = True

        def destroy(self) -> None:
            self.destroyed = True

    nodes, context = [Node(True), Node(False)], Context()
    with pytest.raises(RuntimeError, match='first node'):
        leave_graph(nodes, context)
    assert all(n.destroyed for n in nodes) and context.ended and context.destroyed


# A group's leader that starts a member ending slowly on SIGTERM, as a recorder closing its bag.
GROUP = textwrap.dedent(
    """
    import subprocess, sys
    member = '''
    import signal, sys, time
    def closing(*_):
        time.sleep(0.3)
        open(sys.argv[1], 'w').write('closed on SIGTERM')
        sys.exit(0)
    signal.signal(signal.SIGTERM, closing)
    print('ready', flush=True)
    while True:
        time.sleep(1)
    '''
    p = subprocess.Popen([sys.executable, '-c', member, sys.argv[1]], stdout=subprocess.PIPE)
    p.stdout.readline()
    print('started', flush=True)
    """
)


def test_end_group_lets_a_member_left_behind_end_on_sigterm(tmp_path):
    from harness_types.process import end_group, group_members

    closed = tmp_path / 'closed'
    leader = subprocess.Popen(
        [sys.executable, '-c', GROUP, str(closed)], stdout=subprocess.PIPE, start_new_session=True
    )
    assert leader.stdout.readline() == b'started\n'
    leader.wait(timeout=30)
    (member,) = group_members(leader.pid)
    assert member != leader.pid
    end_group(leader.pid)
    assert closed.read_text() == 'closed on SIGTERM'  # not SIGKILLed first
    assert group_members(leader.pid) == []


def test_end_group_kills_a_member_that_ignores_sigterm():
    from harness_types.process import end_group, group_members

    stubborn = (
        'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
        "print('ready', flush=True); time.sleep(60)"
    )
    p = subprocess.Popen(
        [sys.executable, '-c', stubborn], stdout=subprocess.PIPE, start_new_session=True
    )
    assert p.stdout.readline() == b'ready\n'
    end_group(p.pid, grace=0.5)
    assert p.wait(timeout=10) == -9
    assert group_members(p.pid) == []


def test_interrupts_held_notes_a_ctrl_c_and_puts_the_handler_back():
    import signal

    from harness_types.process import interrupts_held

    # Python's own Ctrl-C handler, whatever this process inherited (a background job of a
    # non-interactive shell starts with SIGINT ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt), interrupts_held() as held:  # raised at its end
            os.kill(os.getpid(), signal.SIGINT)  # handled before the next line runs
            done.append('the work went on')
        assert held == [signal.SIGINT] and done == ['the work went on']
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):  # outside the block, as before it
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_interrupts_held_are_handled_as_the_handler_before_would():
    """Held Ctrl-Cs go, once the block ends, to the handler the block found: a Python handler
    is called for each, an ignored SIGINT stays ignored."""
    import signal

    from harness_types.process import interrupts_held

    inherited = signal.getsignal(signal.SIGINT)
    calls = []
    try:
        signal.signal(signal.SIGINT, lambda number, _frame: calls.append(number))
        with interrupts_held() as held:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            assert calls == []  # held, not yet handled
        assert held == calls == [signal.SIGINT, signal.SIGINT]
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with interrupts_held() as held:
            os.kill(os.getpid(), signal.SIGINT)
        assert held == [signal.SIGINT]  # noted, and then ignored as before: nothing raised
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_exit_status_in_words_whatever_the_signal():
    """A real-time signal has no name in Python (signal.Signals(35) raised ValueError: the
    kernel's account of a program killed by its workspace signal was a traceback)."""
    import signal

    from harness_types.process import exit_words

    assert exit_words(0) == 'exit code 0' and exit_words(3) == 'exit code 3'
    assert exit_words(-signal.SIGKILL) == 'killed by SIGKILL'
    assert exit_words(-(signal.SIGRTMIN + 1)) == f'killed by signal {signal.SIGRTMIN + 1}'
