"""The learned half in the kernel core (a real program process, a scripted robot): the
strategy comes first, start() checks the catalogue, run_policy is sent the catalogue's entry,
the policy-to-end hook."""

import pytest
from harness_policy.catalog import Catalog, PolicySpec

CATALOG = Catalog(
    {
        'expert': PolicySpec(
            'expert',
            'A test policy.',
            'ws://127.0.0.1:1',
            learned=('lift', 'stack'),
            finishes=('lift',),
        )
    }
)


def test_every_motion_before_start_is_refused(make_kernel):
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell("move_eef([0.1, 0.0, 1.0], arm='left')")
    assert r.status == 'escalated' and r.stopped_by.event == 'SKILL_ERROR'
    assert 'strategy first' in r.stopped_by.detail and robot.calls == []
    # Contact skills are refused at their first step too.
    r = kernel.run_cell("pick(locate('cube')[0]) if locate('cube') else home()")
    assert r.status == 'escalated' and 'strategy first' in r.stopped_by.detail
    assert robot.calls == [] and r.strategy == ''
    r = kernel.run_cell("print(start('b', 'pick_by_number'))\nhome()")
    assert r.status == 'ok', r.traceback
    assert 'strategy B' in r.output and [c[0] for c in robot.calls] == ['home']
    assert (r.strategy, r.strategy_kind) == ('B', 'pick_by_number')


def test_start_checks_the_strategy_and_the_kind(make_kernel):
    kernel, *_ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell("start('D', 'lift')")
    assert r.status == 'error' and 'A, B, C' in r.traceback
    r = kernel.run_cell("start('A', 'pour')")
    assert r.status == 'error' and "no policy learned 'pour'" in r.traceback
    assert 'lift, stack' in r.traceback
    r = kernel.run_cell("start('C', 'stack')\nstart('C', 'stack')")  # the same choice again
    assert r.status == 'ok' and r.strategy == 'C'
    r = kernel.run_cell("start('A', 'lift')")
    assert r.status == 'error' and 'already called' in r.traceback


def test_start_with_the_instruction_chooses_a_policy_that_learned_it(make_kernel):
    """A policy trained on listed instructions learned no other: given the task's instruction,
    start() names one that learned it (the rule the bench's baseline follows)."""
    lift = 'Pick up the red cube.'
    catalog = Catalog(
        {
            'one_task': PolicySpec(
                'one_task', 'Trained on one task.', 'ws://127.0.0.1:1', learned=('lift',),
                finishes=('lift',), instructions=(lift,),
            ),
            'expert': CATALOG.policies['expert'],
        }
    )  # fmt: skip
    kernel, *_ = make_kernel(catalog=catalog)
    r = kernel.run_cell("print(start('A', 'lift', 'Pick up the moving cube.'))")
    assert r.status == 'ok' and "run_policy('expert'" in r.output, r.traceback
    kernel, *_ = make_kernel(catalog=catalog)
    r = kernel.run_cell(f"print(start('A', 'lift', {lift!r}))")
    assert r.status == 'ok' and "run_policy('one_task'" in r.output
    kernel, *_ = make_kernel(catalog=catalog)
    r = kernel.run_cell("print(start('A', 'lift'))")  # no instruction: said what it learned
    assert "run_policy('one_task'" in r.output and f'learned only the instructions {lift!r}' in (
        r.output
    )
    # the same choice again answers the policy it chose, whatever instruction it is given
    r = kernel.run_cell("print(start('A', 'lift', 'Pick up the moving cube.'))")
    assert r.status == 'ok' and "run_policy('one_task'" in r.output
    assert 'learned only the instructions' in r.output
    alone = Catalog({'one_task': catalog.policies['one_task']})
    kernel, *_ = make_kernel(catalog=alone)
    r = kernel.run_cell("start('C', 'lift', 'Pick up the moving cube.')")
    assert r.status == 'error' and 'learned only their listed instructions' in r.traceback


def test_after_b_one_hand_over_before_anything_moved(make_kernel):
    """The seed's rule: the model's own tools failed early at a task a policy learned; it may
    still hand the task over once from the untouched start pose, never after a motion."""
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell("start('B', 'lift')\nrun_policy('expert', 'Lift the cube.')")
    assert r.status == 'escalated' and 'may still hand the task to a policy once' in (
        r.stopped_by.detail
    )
    r = kernel.run_cell("print(start('A', 'lift'))")
    assert r.status == 'ok' and r.strategy == 'A' and 'strategy A' in r.output
    r = kernel.run_cell("start('B', 'lift')")  # and not back again
    assert r.status == 'error' and 'already called' in r.traceback
    moved, robot2, _ = make_kernel(catalog=CATALOG)
    r = moved.run_cell("start('B', 'lift')\nhome()")
    assert r.status == 'ok' and [c[0] for c in robot2.calls] == ['home']
    r = moved.run_cell("start('A', 'lift')")
    assert r.status == 'error' and 'only before anything has moved the arms' in r.traceback


def test_list_policies_says_what_each_learned(make_kernel):
    kernel, *_ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell('print(list_policies())')
    assert 'expert (version 1): A test policy.' in r.output
    assert 'usually finishes: lift' in r.output and 'does not usually finish: stack' in r.output


def test_run_policy_is_sent_the_catalogue_entry_and_policy_to_end_runs_it_on(make_kernel):
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell(
        "start('A', 'lift')\nrun = run_policy('expert', 'Lift the cube.', max_seconds=9)"
    )
    assert r.status == 'ok', r.traceback
    skill, args, _ = robot.calls[-1]
    assert skill == 'run_policy' and args['instruction'] == 'Lift the cube.'
    assert args['entry']['endpoint'] == 'ws://127.0.0.1:1' and args['max_seconds'] == 9
    assert args['to_end'] is False
    r = kernel.run_cell("run_policy('nobody', 'x')")
    assert r.status == 'error' and "no policy is called 'nobody'" in r.traceback
    end = kernel.policy_to_end(100.0)
    assert end.status == 'ok' and end.strategy == 'A'
    skill, args, _ = robot.calls[-1]
    assert skill == 'run_policy' and args['to_end'] is True
    assert args['instruction'] == 'Lift the cube.' and args['max_seconds'] == 100.0


def test_policy_to_end_without_a_policy_strategy_says_so(make_kernel):
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    kernel.run_cell("start('B', 'lift')")
    end = kernel.policy_to_end(100.0)
    assert end.status == 'error' and 'not A or C' in end.traceback and robot.calls == []


def test_without_a_catalogue_the_learned_names_say_policies_are_off(make_kernel):
    kernel, robot, _ = make_kernel()
    r = kernel.run_cell("start('A', 'lift')")
    assert r.status == 'error' and 'policies are not enabled' in r.traceback
    assert kernel.run_cell('home()').status == 'ok' and robot.calls[-1][0] == 'home'


@pytest.mark.parametrize('policies', [False, True])
def test_the_learned_names_are_enabled_only_with_policies(policies):
    from harness_kernel.api_table import LEARNED_NAMES, enabled_names

    names = enabled_names(None, policies)
    assert all((n in names) == policies for n in LEARNED_NAMES)
    assert 'pick' in names


def test_strategy_b_runs_no_policy(make_kernel):
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    r = kernel.run_cell("start('B', 'lift')\nrun_policy('expert', 'Lift the cube.')")
    assert r.status == 'escalated' and 'the strategy is B, programs only' in r.stopped_by.detail
    assert robot.calls == []


def test_policy_to_end_that_cannot_reach_the_skill_server_is_an_error_result(make_kernel):
    kernel, robot, _ = make_kernel(catalog=CATALOG)
    kernel.run_cell("start('A', 'lift')\nrun_policy('expert', 'Lift the cube.')")

    def gone(*args):
        raise RuntimeError('the skill server does not offer skills/run_policy')

    robot.execute = gone
    end = kernel.policy_to_end()
    assert end.status == 'error' and 'policy-to-end could not run' in end.traceback
    assert 'does not offer' in end.traceback and end.strategy == 'A'


def test_predict_future_checks_its_arguments_before_asking(make_kernel):
    kernel, *_ = make_kernel(catalog=CATALOG)
    for code, said in (
        ('predict_future()', 'needs a policy name or actions'),
        ("predict_future('expert', actions=[[0] * 14])", 'a policy or actions, not both'),
        ('predict_future(actions=[[0] * 5])', 'N x 14 finite numbers, got (1, 5)'),
        (
            "predict_future(actions=[[float('nan')] * 14])",
            'N x 14 finite numbers, got a value that is not finite',
        ),
        ('predict_future(actions=[[0] * 14], seconds=61)', 'seconds must be in (0, 60]'),
        ("predict_future('nobody')", "no policy is called 'nobody'"),
    ):
        r = kernel.run_cell(code)
        assert r.status == 'error' and said in r.traceback, (code, r.traceback)
