"""The kernel core with a real sandboxed program process and a scripted robot (no ROS):
statuses, persistence, output, names, handlers, the reactive relay, timeouts."""

import json
import re

import pytest
from conftest import robot_state


def test_ok_and_variables_persist(make_kernel):
    kernel, *_ = make_kernel()
    assert kernel.run_cell('x = 41\nprint("hello")').status == 'ok'
    r = kernel.run_cell('x += 1\nprint(x)')
    assert r.status == 'ok' and r.output.strip() == '42'


def test_error_traceback_has_only_program_frames(make_kernel):
    kernel, *_ = make_kernel()
    r = kernel.run_cell('def f():\n    return 1 / 0\n\nf()')
    assert r.status == 'error'
    assert 'ZeroDivisionError' in r.traceback
    assert '<cell 1>' in r.traceback and 'return 1 / 0' in r.traceback
    assert 'harness_kernel' not in r.traceback and 'cell.py' not in r.traceback
    syntax = kernel.run_cell('def (:')
    assert syntax.status == 'error' and 'SyntaxError' in syntax.traceback


def test_output_is_clipped_even_for_10_mb(make_kernel):
    kernel, *_ = make_kernel()
    r = kernel.run_cell('print("x" * 10_000_000)\nimport os\nos.write(1, b"y" * 3_000_000)')
    assert r.status == 'ok'
    assert len(r.output) < 8100 and 'output clipped' in r.output
    assert kernel.run_cell('print("next")').output.strip() == 'next'


def test_finish_is_the_kernels_record(make_kernel):
    kernel, *_ = make_kernel()
    r = kernel.run_cell('finish("cube lifted")\nprint("never")')
    assert r.status == 'finished' and r.summary == 'cube lifted' and 'never' not in r.output
    # A program that swallows the stop still finished: the kernel saw finish().
    r = kernel.run_cell('try:\n    finish("done")\nexcept BaseException:\n    print("caught")')
    assert r.status == 'finished' and r.summary == 'done'


def test_escalated_with_the_event(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.events = ['BLOCKED']
    r = kernel.run_cell('move_joints([0, 0.5, 0.5, 0, 0, 0], arm="left")\nprint("after")')
    assert r.status == 'escalated' and r.stopped_by.event == 'BLOCKED'
    assert 'after' not in r.output and len(r.executions) == 1
    # Moves after an escalation the program swallowed are refused: the cell is over.
    robot.events = ['BLOCKED']
    r = kernel.run_cell('try:\n    home()\nexcept BaseException:\n    pass\nhome()\nprint("moved")')
    assert r.status == 'escalated' and len(robot.calls) == 2


def test_a_handler_absorbs_or_escalates(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.events = ['BLOCKED', 'TIMEOUT']
    r = kernel.run_cell(
        'seen = []\n'
        'on("BLOCKED", lambda e: seen.append(e.event) or True)\n'
        'r = home()\nprint(r.event, r.handled, seen)\n'
        'home()\nprint("not reached")'
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'TIMEOUT'
    assert "BLOCKED True ['BLOCKED']" in r.output and 'not reached' not in r.output
    assert r.events_handled == 1


def test_a_handler_may_call_the_api(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.events = ['BLOCKED']
    r = kernel.run_cell(
        'def back_home(e):\n    print("home:", home().event)\n    return True\n'
        'on("*", back_home)\nprint(move_joints([0.1] * 6, arm="left").event)'
    )
    assert r.status == 'ok', r.traceback
    assert r.output.split() == ['home:', 'COMPLETED', 'BLOCKED']
    assert [c[0] for c in robot.calls] == ['move_joints', 'home']


def test_raising_inside_a_handler(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.events = ['SKILL_ERROR']
    r = kernel.run_cell(
        'def h(e):\n    raise RuntimeError("bad handler")\non("SKILL_ERROR", h)\nhome()'
    )
    assert r.status == 'error' and 'handler for SKILL_ERROR raised RuntimeError' in r.traceback
    assert kernel.run_cell('on("SKILL_ERROR", None)\nprint("ok")').output.strip() == 'ok'


def test_api_names_are_restored_and_bad_calls_say_why(make_kernel):
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell('home = 3\nprint(home)')
    assert r.status == 'ok' and r.restored == ['home'] and r.output == '3\n'
    r = kernel.run_cell('move_joints([0] * 6, elbow=3)')
    assert r.status == 'error' and "unexpected keyword argument 'elbow'" in r.traceback
    r = kernel.run_cell('move_joints(["a"] * 6)')
    assert r.status == 'error' and 'ValueError' in r.traceback
    r = kernel.run_cell('move_eef([0.3, 0, 1], max_seconds=-1)')
    assert r.status == 'error' and 'max_seconds=): must be 0 (the default) or more' in r.traceback
    r = kernel.run_cell('pick("the cube")')
    assert r.status == 'error' and 'needs an object from locate()' in r.traceback


def test_built_ins_a_cell_rebinds_are_put_back_for_the_next(make_kernel):
    """A cell that rebinds Python's built-ins (the whole process's) would break the API's own
    code and every later cell, an operator's skill action too: they are put back and named."""
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell(
        'import builtins\nbuiltins.print = None\nbuiltins.extra = 1\n__builtins__.len = None'
    )
    assert r.status == 'ok', r.traceback
    assert {'builtins.print', 'builtins.len', 'builtins.extra'} <= set(r.restored)
    r = kernel.run_cell('print(len([1, 2]), hasattr(__builtins__, "extra"))\nhome()')
    assert r.status == 'ok' and r.output == '2 False\n' and r.restored == []
    assert [c[0] for c in robot.calls] == ['home']
    r = kernel.run_cell('__builtins__ = {}')
    assert r.restored == ['__builtins__'] and kernel.run_cell('print(1)').output == '1\n'
    # a cell that breaks what its own error is written with: put back all the same
    r = kernel.run_cell(
        'import builtins\nbuiltins.isinstance = builtins.len = None\nraise ValueError(7)'
    )
    assert r.status == 'error' and 'ValueError: 7' in r.traceback, r.traceback
    assert {'builtins.isinstance', 'builtins.len'} <= set(r.restored)
    assert kernel.run_cell('print(len([1]), isinstance(1, int))').output == '1 True\n'


def test_a_call_no_check_foresaw_is_answered_and_the_next_cell_runs(make_kernel):
    """Past the program's own checks, straight to the channel: an object whose fields are of
    the wrong types, a point of two numbers for move_eef, a number too big for a float. Each
    is answered with an error the program can catch; the kernel and the channel stay in step."""
    kernel, robot, _ = make_kernel()
    api = (
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        'LO = locate.__closure__[0].cell_contents.__globals__["LocatedObject"]\n'
    )
    r = kernel.run_cell(
        api
        + 'for name, args in [\n'
        + '    ("pick", {"obj": LO(1, 2, "abc", 5, "x", 7)}),\n'
        + '    ("move_eef", {"position": [0.3, 0.1]}),\n'
        + '    ("pick", {"obj": LO("a", "b", [0.0, 0.0, 0.8], [0.02] * 3, 0.82, []),'
        + ' "lift": 10 ** 400}),\n'
        + '    ("move_joints", {"positions": [0.0] * 6, "max_seconds": float("inf")}),\n'
        + '    ("open_gripper", {"fraction": float("nan")}),\n'
        + ']:\n'
        + '    try:\n'
        + '        api._call(name, **args)\n'
        + '    except Exception as e:\n'
        + '        print(type(e).__name__, "|", e)\n'
    )
    lines = r.output.strip().splitlines()
    assert r.status == 'ok' and len(lines) == 5, r.output + r.traceback
    assert lines[0].startswith('ValueError | pick(): the object has no valid position')
    assert lines[1].startswith('ValueError | move_eef(): bad arguments')
    assert lines[2].startswith('ValueError | pick(lift=): must be a number')
    # no bound, speed or share is infinite or nan: said before anything moves
    assert lines[3] == 'ValueError | move_joints(max_seconds=): must be a finite number, not inf'
    assert lines[4] == 'ValueError | open_gripper(fraction=): must be a finite number, not nan'
    assert not robot.calls
    assert kernel.run_cell('print(1 + 1)').output.strip() == '2'


def test_a_skill_servers_arguments_are_checked_by_kind_before_a_goal_is_made(make_kernel):
    """A goal's fields are set from a skill call's arguments, and a wrong type in a message
    field aborts the process that converts it: an arm that is not text, cameras given as one
    name, a region that is not two corners are each refused by kind before anything moves."""
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell(
        'for call in (lambda: move_joints([0] * 6, arm=["left"]), lambda: home(arm=3),\n'
        '             lambda: open_gripper(arm={"a": 1}),\n'
        '             lambda: run_controller(lambda o: None, cameras="cam_head"),\n'
        '             lambda: run_controller(lambda o: None, cameras=[1]),\n'
        "             lambda: run_controller(lambda o: None, cameras=['cam_head'] * 300),\n"
        "             lambda: run_controller(lambda o: None, cameras=['cam_head'] * 2),\n"
        "             lambda: run_controller(lambda o: None, cameras=['cam_head\\x00']),\n"
        "             lambda: locate('red\\x00cube'), lambda: verify('\\ud800'),\n"
        '             lambda: move_eef([0.3, 0.1, 0.9], region=([0, 0, 0],))):\n'
        '    try:\n'
        '        call()\n'
        '    except ValueError as e:\n'
        '        print(e)\n'
    )
    assert r.status == 'ok', r.traceback
    assert r.output.splitlines() == [
        "move_joints(arm=): arm must be 'left', 'right' or '', got ['left']",
        "home(): arm must be 'left', 'right' or '', got 3",
        "open_gripper(): arm must be 'left', 'right' or '', got {'a': 1}",
        "run_controller(cameras=): must be a list of names, e.g. ['cam_head'], not 'cam_head'",
        "run_controller(cameras=): must be a list of names, e.g. ['cam_head'], not [1]",
        'run_controller(cameras=): 300 names: at most 16 distinct names',
        "run_controller(cameras=): names ['cam_head'] more than once: at most 16 distinct names",
        "run_controller(cameras=): a name is printable text, not ['cam_head\\x00']",
        "locate(): text without NUL characters or lone surrogates, not 'red\\x00cube'",
        "verify(): text without NUL characters or lone surrogates, not '\\ud800'",
        'move_eef(region=): must be ([xmin, ymin, zmin], [xmax, ymax, zmax]), not [[0, 0, 0]]',
    ]
    assert not robot.calls


def test_a_handler_that_fails_unforeseen_is_an_error_the_program_catches(make_kernel):
    """The last resort: whatever a handler raises (here an IndexError) reaches the program as
    a RuntimeError that names it, and the kernel and the channel go on."""
    kernel, robot, _ = make_kernel()
    kernel.contact.release = lambda arm: [][1]
    r = kernel.run_cell('try:\n    release()\nexcept RuntimeError as e:\n    print("caught", e)\n')
    assert r.status == 'ok', r.traceback
    assert 'caught release() failed in the kernel: IndexError' in r.output
    assert kernel.run_cell('print(1 + 1)').output.strip() == '2'


def test_a_bad_point_for_press_is_its_skill_error_as_before(make_kernel):
    """press checks its point itself: a bad one is a SKILL_ERROR the program's handlers see."""
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell('press([0.1, 0.2])')
    assert r.status == 'escalated' and r.stopped_by.event == 'SKILL_ERROR'
    assert 'press needs a located object or a point' in r.stopped_by.detail and not robot.calls


def test_a_disabled_name_is_refused_with_a_clear_error(make_kernel):
    kernel, robot, _ = make_kernel(api=['state', 'home', 'finish'])
    r = kernel.run_cell('move_joints([0] * 6)')
    assert r.status == 'error' and 'move_joints() is not enabled' in r.traceback
    assert 'home' in r.traceback and not robot.calls
    assert kernel.run_cell('print(home().event)').output.strip() == 'COMPLETED'
    # Past the namespace, straight to the channel: the kernel refuses it too.
    r = kernel.run_cell(
        'api = next(v for c in when.__closure__ for v in (c.cell_contents, '
        'getattr(c.cell_contents, "__self__", None)) if type(v).__name__ == "ProgramApi")\n'
        'print(api._call("move_joints", positions=[0.0] * 6, arm="", speed=0.0, '
        'max_seconds=0.0))'
    )
    assert r.status == 'error' and 'not enabled' in r.traceback
    assert [c[0] for c in robot.calls] == ['home']


def test_guards_run_in_the_program_and_fire(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.ticks = 20
    r = kernel.run_cell(
        'when(lambda obs: obs.step >= 5, "CONTACT", name="five")\n'
        'move_joints([0.1] * 6, arm="left")'
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'CONTACT'
    assert robot.calls[-1][2] is True  # the execution asked for the reactive stage
    assert robot.reactive_results[-1].guard_fired == 'five' and len(robot.reactive_results) == 6


def test_a_reactive_step_outside_a_reactive_execution_is_refused(make_kernel):
    kernel, robot, _ = make_kernel()
    assert 'no cell is running' in kernel.reactive_step(robot_state(), True).fault
    robot.ticks, robot.ask_always = 3, True  # a skill server that ignored the goal's options
    r = kernel.run_cell('move_joints([0.1] * 6, arm="left")')
    assert robot.calls[-1][2] is False  # the execution did not ask for the reactive stage
    assert 'no execution of the running cell calls the reactive stage' in (
        robot.reactive_results[0].fault
    )
    assert r.stopped_by.event == 'REACTIVE_FAULT'
    assert kernel.run_cell('print("usable")').output.strip() == 'usable'


def test_an_endless_guard_is_stopped_from_outside(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.ticks = 5
    r = kernel.run_cell(
        'def stuck(obs):\n    while True:\n        pass\n'
        'when(stuck, name="stuck")\nmove_joints([0.1] * 6, arm="left")'
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'REACTIVE_FAULT'
    fault = robot.reactive_results[-1].fault
    assert 'did not return' in fault
    # the guard's own line and why (a harness line of 44 and an empty reason had been said)
    assert re.search(r'raised ReactiveTimeout: it did not return in time \(line [23]\)', fault)
    assert kernel.run_cell('clear_guards()\nprint("usable")').output.strip() == 'usable'


def test_a_guard_that_ignores_the_interrupt_costs_the_process(make_kernel):
    kernel, robot, _ = make_kernel()
    robot.ticks = 5
    r = kernel.run_cell(
        'x = 1\n'
        'def stubborn(obs):\n    while True:\n        try:\n            while True:\n'
        '                pass\n        except BaseException:\n            pass\n'
        'when(stubborn)\nmove_joints([0.1] * 6, arm="left")'
    )
    assert r.status == 'error' and 'did not stop when interrupted' in r.traceback
    # Found by the reactive_step thread and ended at once, not by the cell's timeout later.
    assert 'reactive code did not return' in r.traceback, r.traceback
    r = kernel.run_cell('print(x)')
    assert r.status == 'error' and "name 'x' is not defined" in r.traceback
    assert any(
        'variables, functions, guards and handlers of earlier cells are lost' in note
        for note in r.notes
    )


def test_an_endless_cell_is_interrupted_then_killed(make_kernel):
    kernel, *_ = make_kernel(cell_timeout=1.0)
    kernel.run_cell('kept = 7')
    r = kernel.run_cell('while True:\n    pass')
    assert r.status == 'error' and 'cell_timeout_seconds' in r.traceback
    assert kernel.run_cell('print(kept)').output.strip() == '7'  # interrupted: still alive
    r = kernel.run_cell(
        'while True:\n    try:\n        while True:\n            pass\n'
        '    except BaseException:\n        pass'
    )
    assert r.status == 'error' and 'did not stop when interrupted' in r.traceback
    r = kernel.run_cell('print(kept)')
    assert r.status == 'error' and any('variables' in note for note in r.notes)


def test_a_program_that_swallows_its_timeout_cannot_move_in_the_grace(make_kernel):
    """The grace after an interrupt is for stopping: a program that caught CellTimeout and
    went on had its moves served (the simulator, faster than real time, spent the episode's
    steps in it) and its cell said ok. Its calls are refused and the cell is an error."""
    kernel, robot, _ = make_kernel(cell_timeout=1.0)
    r = kernel.run_cell(
        'import time\n'
        'try:\n    time.sleep(30)\n'
        'except BaseException as e:\n    print("caught", type(e).__name__)\n'
        'try:\n    move_joints([1.0, 0, 0, 0, 0, 0], arm="left")\n'
        'except RuntimeError as e:\n    print(e)\n'
    )
    assert r.status == 'error' and r.traceback.startswith('CellTimeout:'), r
    assert r.output.splitlines() == [
        'caught CellTimeout',
        'move_joints() refused: CellTimeout: the cell ran longer than cell_timeout_seconds '
        '(1 s) and was stopped',
    ]
    assert not robot.calls
    assert kernel.run_cell('print(home().event)').output.strip() == 'COMPLETED'


def test_a_cell_bounded_to_one_call_is_served_one_whatever_its_text(make_kernel):
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell('exec("home()\\nhome()")', max_calls=1)
    assert r.status == 'error' and 'home() refused: this cell may make 1 API call' in r.traceback
    assert [c[0] for c in robot.calls] == ['home']
    r = kernel.run_cell('[home() for _ in range(3)]')  # no bound
    assert r.status == 'ok' and len(robot.calls) == 4


def test_verify_and_show_and_the_log(make_kernel):
    kernel, _, log = make_kernel()
    r = kernel.run_cell(
        'v = verify("the cube is up")\nprint(bool(v), v.sentence)\n'
        'import numpy as np\nshow(np.zeros((4, 5)), "grey")'
    )
    assert r.status == 'ok' and 'True checked: the cube is up' in r.output
    assert r.images[0].caption == 'grey' and r.images[0].rgb.shape == (4, 5, 3)
    calls = [entry['call'] for entry in log if 'call' in entry]
    assert 'verify' in calls and 'show' in calls
    assert json.dumps(log)


@pytest.mark.parametrize(
    'code',
    [
        'print(state().left.tcp)',
        'print(state().arms["right"].gripper)',
    ],
)
def test_state_reaches_the_program(make_kernel, code):
    kernel, *_ = make_kernel()
    r = kernel.run_cell(code)
    assert r.status == 'ok', r.traceback
