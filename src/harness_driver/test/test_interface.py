"""The interface ladder's rungs: what one reply may hold, the cell it becomes, and the scripted
skills baseline derived from the reference programs."""

import re

import pytest
from harness_bench.reference import reference_cells
from harness_bench.tasks import TASKS
from harness_driver.interface import (
    action_cell,
    call_cell,
    cell_of,
    format_help,
    skills_steps,
)
from harness_kernel.api_table import API_NAMES
from harness_types.reply import FormatError, Reply, parse_reply

API = list(API_NAMES)


def test_a_call_is_one_statement_with_one_api_call_and_its_result_printed():
    assert call_cell("cube = locate('red cube')[0]", API) == (
        "cube = locate('red cube')[0]\nprint('cube', \"=\", repr((cube)))\n"
    )
    assert call_cell('pick(cube, lift=0.1)', API) == '_ = pick(cube, lift=0.1)\nprint(repr(_))\n'
    assert call_cell('import numpy as np', API) == 'import numpy as np\n'
    assert 'print' in call_cell('gap = np.linalg.norm(a - b)', API)  # no API call: computing


@pytest.mark.parametrize(
    'body,why',
    [
        ('pick(a)\nplace(onto=b)', 'holds 2 statements'),
        ('pick(locate("cube")[0])', 'calls 2 API functions (pick, locate)'),
        ('for c in cubes:\n    pick(c)', 'inside a loop, a condition or a definition'),
        ('if ok:\n    home()', 'inside a loop, a condition or a definition'),
        ('pick(', 'not Python'),
    ],
)
def test_a_call_that_is_not_one_call_is_a_format_error(body, why):
    with pytest.raises(FormatError, match=re.escape(why)):
        call_cell(body, API)


def test_an_action_is_one_motion_of_one_arm():
    cell = action_cell('{"arm": "left", "position": [-0.2, 0.0, 0.85], "gripper": 0.0}')
    assert "move_eef([-0.2, 0.0, 0.85], quat=None, arm='left')" in cell
    assert "close_gripper(arm='left', fraction=0.0)" in cell
    cell = action_cell('{"arm": "right", "joints": [0, 0.5, 0.5, 0, 0, 0]}')
    assert "move_joints([0.0, 0.5, 0.5, 0.0, 0.0, 0.0], arm='right')" in cell
    assert 'open_gripper(arm' in action_cell('{"arm": "right", "gripper": 1}')


@pytest.mark.parametrize(
    'body,why',
    [
        ('[1, 2]', 'one JSON object'),
        ('{"arm": "middle", "gripper": 1}', '"arm": "left" or "right"'),
        ('{"arm": "left"}', 'needs "position", "joints" or "gripper"'),
        ('{"arm": "left", "position": [0, 0]}', '"position" must be a list of 3 numbers'),
        ('{"arm": "left", "position": [0, 0, "up"]}', 'finite numbers'),
        ('{"arm": "left", "joints": [0, 0, 0, 0, 0, NaN]}', 'finite numbers'),
        ('{"arm": "left", "gripper": 2}', 'from 0 (closed) to 1 (open)'),
        ('{"arm": "left", "position": [0, 0, 1], "quat": [1, 1, 0, 0]}', 'unit quaternion'),
        ('{"arm": "left", "quat": [1, 0, 0, 0]}', '"quat" goes with a "position"'),
        ('{"arm": "left", "position": [0, 0, 1], "joints": [0, 0, 0, 0, 0, 0]}', 'not both'),
        ('{"arm": "left", "speed": 3, "gripper": 1}', "unknown keys ['speed']"),
        ('{"arm": "left",', 'not JSON'),
    ],
)
def test_a_bad_action_is_a_format_error_that_says_what_is_wrong(body, why):
    with pytest.raises(FormatError, match=re.escape(why)):
        action_cell(body)


def test_a_reply_of_another_rung_is_refused():
    with pytest.raises(FormatError, match='interface is skills: a <python> block'):
        cell_of('skills', Reply('python', 'pick(x)', ''), API)
    with pytest.raises(FormatError, match='no <call>, <verify> or <finish> block'):
        parse_reply('<python>pick(x)</python>', ('call', 'verify', 'finish'))
    assert parse_reply('<action>{"arm": "left"}</action>', ('action',)).kind == 'action'
    assert '<action>' in format_help('actions') and '<call>' in format_help('skills')


def test_the_skills_baseline_unrolls_literal_loops_and_drops_prints():
    steps = skills_steps(
        [
            "x = locate('cube')[0]\nprint(x)\nfor arm in ('left', 'right'):\n"
            "    home(arm)\nfinish('ok')\n"
        ],
        API,
    )
    assert steps == [
        "x = locate('cube')[0]",
        "arm = 'left'",
        'home(arm)',
        "arm = 'right'",
        'home(arm)',
        "finish('ok')",
    ]
    for _ in range(2):
        assert skills_steps(['for _ in range(2):\n    home()\n'], API).count('home()') == 2
    with pytest.raises(ValueError, match='for c in found'):
        skills_steps(['for c in found:\n    pick(c)\n'], API)


@pytest.mark.parametrize('task', sorted(TASKS))
def test_every_skills_step_of_a_reference_program_is_a_valid_call(task):
    try:
        steps = skills_steps(reference_cells(task), API)
    except ValueError:
        return  # a program with calls in a loop over runtime values: the baseline says so
    for step in steps:
        call_cell(step, API)
