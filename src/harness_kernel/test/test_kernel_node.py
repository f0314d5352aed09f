"""Integration: the kernel as its own isolated process, with the worker and skill server, runs
cells over /kernel/run_cell; hostile programs get clear errors and the kernel stays usable."""

import json

import pytest
from harness_kernel.kernel_process import KernelProcess
from harness_skills.station_graph import StationGraph


@pytest.fixture(scope='module')
def kernel(tmp_path_factory):
    with StationGraph('driver_stand_in') as graph:
        token = graph.reset('lift_cube').token
        root = tmp_path_factory.mktemp('kernel')
        workspace, log = root / 'workspace', root / 'kernel.log'
        process = KernelProcess(
            graph.client, graph.domain_id, workspace, log, ['-p', 'cell_timeout_seconds:=8.0']
        )
        process.start()
        try:
            yield process.run_cell, workspace, log, token, root
        finally:
            process.stop()


def test_a_program_moves_the_arm_and_variables_persist(kernel):
    run, _, log, *_ = kernel
    r = run(
        's0 = state()\nr = move_joints([0.2, 0.3, 0.3, 0, 0, 0], arm="left")\n'
        'print(r.event, r.ok, len(r.trace) > 0)'
    )
    assert r.status == 'ok', r.traceback
    assert 'COMPLETED True True' in r.output
    assert len(r.executions) == 1 and r.executions[0].event.name == 'COMPLETED'
    r = run('print(round(state().left.joints[0] - s0.left.joints[0], 2))')
    assert r.output.strip() == '0.2'
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e['call'] for e in entries][:2] == ['state', 'move_joints']


def test_escalation_carries_the_event_and_trace(kernel):
    run, *_ = kernel
    r = run('move_eef([-0.3, 0.7, 0.9], arm="left")')
    assert r.status == 'escalated' and r.event.name == 'SKILL_ERROR'
    assert 'cannot reach' in r.event.detail


def test_starting_a_process_is_refused(kernel):
    run, *_ = kernel
    r = run('import subprocess\nsubprocess.run(["ls"])')
    assert r.status == 'error' and 'cannot start processes' in r.traceback
    r = run('import os\nos.system("true")')
    assert r.status == 'error' and 'cannot start processes' in r.traceback
    # Landlock enforces it even when the audit hook is bypassed
    r = run(
        'import ctypes, os\nlibc = ctypes.CDLL(None)\n'
        'print(libc.execv(b"/bin/true", (ctypes.c_char_p * 2)(b"/bin/true", None)))'
    )
    assert r.status == 'ok' and r.output.strip() == '-1'  # execv failed: EACCES


def test_writing_outside_the_workspace_is_refused(kernel):
    run, workspace, _, _, root = kernel
    r = run(f'open({str(root / "escape.txt")!r}, "w").write("x")')
    assert r.status == 'error' and 'may write only inside their workspace' in r.traceback
    assert not (root / 'escape.txt').exists()
    r = run('import os\nopen("notes.txt", "w").write("ok")\nprint(os.getcwd())')
    assert r.status == 'ok' and (workspace / 'notes.txt').read_text() == 'ok'
    # ctypes bypasses the hook; Landlock still refuses
    r = run(
        f'import ctypes\nfd = ctypes.CDLL(None).open({str(root / "escape2.txt").encode()!r}, '
        '0o1101, 0o644)\nprint(fd)'
    )
    assert r.output.strip() == '-1' and not (root / 'escape2.txt').exists()


def test_no_outcome_token_and_no_reset(kernel):
    run, _, _, token, _ = kernel
    r = run('outcome("x")')
    assert r.status == 'error' and "name 'outcome' is not defined" in r.traceback
    r = run('import os\nprint(any(v for v in os.environ.values() if len(v) == 32))')
    assert token not in r.output
    program = """
import rclpy
from rclpy.node import Node
from harness_msgs.srv import Outcome, Reset
ctx = rclpy.Context()
rclpy.init(context=ctx)
n = Node('sneaky', context=ctx)
for kind, name, req in [(Outcome, '/worker/outcome', Outcome.Request(token='guess')),
                        (Reset, '/worker/reset', Reset.Request(task='lift_cube'))]:
    c = n.create_client(kind, name)
    c.wait_for_service(timeout_sec=5)
    f = c.call_async(req)
    rclpy.spin_until_future_complete(n, f, timeout_sec=5)
    print(name, f.result().message)
rclpy.shutdown(context=ctx)
"""
    r = run(program)
    assert 'outcome refused: wrong or missing token' in r.output, r.output + r.traceback
    assert 'reset needs the token' in r.output


def test_endless_loop_inside_a_guard(kernel):
    run, *_ = kernel
    r = run(
        'def stuck(obs):\n    while True:\n        pass\n'
        'when(stuck, name="stuck")\nmove_joints([0.0, 0.3, 0.3, 0, 0, 0], arm="left")'
    )
    assert r.status == 'escalated' and r.event.name == 'REACTIVE_FAULT'
    assert 'stuck' in r.event.detail
    assert run('clear_guards()\nprint("usable")').output.strip() == 'usable'


def test_printing_10_mb_and_an_endless_cell(kernel):
    run, *_ = kernel
    r = run('print("y" * 10_000_000)')
    assert r.status == 'ok' and len(r.output) < 8100
    r = run('while True:\n    pass')
    assert r.status == 'error' and 'cell_timeout_seconds' in r.traceback
    assert run('print("after")').output.strip() == 'after'


def test_raising_inside_a_handler(kernel):
    run, *_ = kernel
    r = run(
        'def h(e):\n    raise RuntimeError("bad handler")\non("SKILL_ERROR", h)\n'
        'move_eef([-0.3, 0.7, 0.9], arm="left")'
    )
    assert r.status == 'error' and 'handler for SKILL_ERROR raised RuntimeError' in r.traceback
    assert run('on("SKILL_ERROR", None)\nprint("ok")').output.strip() == 'ok'


def test_finish_and_show(kernel):
    run, *_ = kernel
    r = run('show("cam_head", "the table")\nfinish("done here")')
    assert r.status == 'finished' and r.summary == 'done here'
    assert r.image_captions == ['the table'] and r.images[0].width == 640
