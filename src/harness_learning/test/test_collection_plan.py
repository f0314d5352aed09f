"""The next collection's plan (no episode runs here): failed layouts first and at most a third
of the budget, then farthest-point coverage, never a held-out or already-recorded layout, a
coverage figure that rises; the sources it reads and the plan files it takes."""

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from demos import demo
from harness_learning.collection_plan import (
    PlanError,
    Recorded,
    coverage,
    plan_collection,
    read_plan,
    read_sources,
)
from harness_recording.lerobot import write_datasets


def line(task: str, seed: int) -> np.ndarray:
    """A one-object layout on a line: seed s stands at x = s cm."""
    return np.array([[seed / 100.0, 0.0]])


def test_failed_layouts_come_first_and_take_at_most_a_third():
    recorded = Recorded(
        demonstrations={('t', 0)}, failed={('t', 50 + k): f'gate/{k}' for k in range(5)}
    )
    plan = plan_collection(recorded, ['t'], 6, line, pool=list(range(100)), probes=0)
    whys = [p.why for p in plan.layouts]
    assert [p.seed for p in plan.layouts[:2]] == [50, 51]
    assert whys[:2] == ['failed in gate/0', 'failed in gate/1']
    assert all(w.startswith('coverage') for w in whys[2:]) and len(plan.layouts) == 6


def test_coverage_takes_the_layout_farthest_from_every_demonstration_and_plan():
    recorded = Recorded(demonstrations={('t', 0), ('t', 10)})
    plan = plan_collection(recorded, ['t'], 3, line, pool=list(range(30)), probes=0)
    # the pool's far end first, then half-way between 10 and 29, then between 0 and 10
    assert [p.seed for p in plan.layouts] == [29, 19, 5]  # ties go to the lower seed
    assert plan.layouts[0].why == 'coverage: 19.0 cm from every demonstration and planned layout'


def test_held_out_recorded_and_other_tasks_layouts_are_never_planned():
    recorded = Recorded(demonstrations={('t', 0)}, tried={('t', 29)}, failed={('u', 3): 'x'})
    plan = plan_collection(
        recorded, ['t'], 2, line, pool=list(range(30)), held_out={('t', 28)}, probes=0
    )
    assert [p.seed for p in plan.layouts] == [27, 13]


def test_coverage_rises_with_the_plan():
    def placements(task, seed):
        rng = np.random.default_rng(seed)
        return rng.uniform(-0.1, 0.1, (1, 2))

    recorded = Recorded(demonstrations={('t', s) for s in range(3)})
    plan = plan_collection(recorded, ['t'], 20, placements, pool=list(range(100, 400)), probes=50)
    assert plan.coverage_after['t'] > plan.coverage_before['t']
    doc = plan.to_json()
    assert doc['coverage']['before'] == plan.coverage_before and len(doc['layouts']) == 20


def test_coverage_is_object_by_object():
    demo_layout = np.array([[0.0, 0.0], [0.1, 0.0]])
    near = demo_layout + 0.01
    one_far = np.array([[0.0, 0.0], [0.2, 0.0]])
    assert coverage([demo_layout], [near, one_far], radius_m=0.03) == 0.5
    assert coverage([], [near]) == 0.0


def test_a_budget_is_at_least_one_layout():
    with pytest.raises(PlanError, match='at least 1'):
        plan_collection(Recorded(), ['t'], 0, line, pool=[1])


def summary(folder: Path, seed: int, success: bool, layout: int = -1, executions=()) -> None:
    folder.mkdir(parents=True)
    s = {'task': 'lift_cube', 'layout': layout, 'seed': seed, 'status': 'episode_ended'}
    (folder / 'summary.json').write_text(json.dumps(s | {'outcome': {'success': success}}))
    (folder / 'kernel.log').write_text(''.join(json.dumps(e) + '\n' for e in executions))


def test_the_sources_give_failures_demonstrations_and_what_was_tried(tmp_path):
    bench = tmp_path / 'gate'
    summary(bench / 'a', 9000, False)
    summary(bench / 'b', 9001, True)  # the programs rescued a run that did not finish
    stalled = {'execution': 'run_policy', 'event': 'COMPLETED', 'ticks': 40}
    summary(bench / 'c', 9002, True, executions=[stalled, {'execution': 'pick', 'ticks': 30}])
    summary(bench / 'd', 9003, False, layout=0)  # a fixed layout: not a sampled one to plan
    trials = [
        replace(demo(6, k), meta=demo(6, k).meta | {'task_name': 'lift_cube', 'layout': -1})
        for k in range(2)
    ]
    trials = [replace(t, meta=t.meta | {'seed': s}) for t, s in zip(trials, (1, 9000), strict=True)]
    write_datasets(tmp_path / 'demos' / 'dataset', trials)
    # a run's own dataset is a trial of a bench, not a collection's demonstration
    write_datasets(bench / 'b' / 'lerobot', [replace(trials[0], meta=trials[0].meta | {'seed': 5})])
    found = read_sources([bench, tmp_path / 'demos'])
    assert found.demonstrations == {('lift_cube', 1), ('lift_cube', 9000)}
    assert set(found.failed) == {('lift_cube', 9002)}  # 9000 was demonstrated since
    assert found.tried == {('lift_cube', s) for s in (9000, 9001, 9002)}
    with pytest.raises(PlanError, match='holds no sampled episode'):
        read_sources([tmp_path / 'demos' / 'dataset' / 'meta' / 'episodes'])
    with pytest.raises(PlanError, match='is not a folder'):
        read_sources([tmp_path / 'nope'])
    # the same bench twice (a rerun on its seeds): its repeats are no reason to refuse it
    assert read_sources([bench, bench]).tried == found.tried


@pytest.mark.parametrize(
    'seed,outcome,said',
    [
        ('abc', {}, "its seed 'abc' is not one of 0.."),
        (True, {}, 'its seed True'),
        (2**70, {}, 'its seed 1180591620717411303424'),
        (-5, {}, 'its seed -5'),
        (7, 'yes', "its outcome 'yes' is not an object"),
    ],
)
def test_a_damaged_summary_is_one_line_naming_it(tmp_path, seed, outcome, said):
    """(Each had been a traceback, or a plan that harness demos then refused.)"""
    (tmp_path / 'a').mkdir()
    s = {'task': 'lift_cube', 'layout': -1, 'seed': seed, 'status': 'episode_ended'}
    (tmp_path / 'a' / 'summary.json').write_text(json.dumps(s | {'outcome': outcome}))
    with pytest.raises(PlanError, match=re.escape(said)):
        read_sources([tmp_path])


@pytest.mark.parametrize(
    'text,said',
    [
        ('{', 'is not JSON'),
        ('{"layouts": []}', 'expected {"layouts"'),
        ('{"layouts": [{"task": "t"}]}', 'layout 0 needs a task (text) and a seed (integer)'),
        ('{"layouts": [{"task": "t", "seed": true}]}', 'a seed (integer)'),
        ('{"layouts": [{"task": "t", "seed": -1}]}', 'has the seed -1, not in 0..'),
        ('{"layouts": [{"task": "t", "seed": 9223372036854775808}]}', 'not in 0..'),
        ('{"layouts": [{"task": "t", "seed": 1}, {"task": "t", "seed": 1}]}', 'twice'),
        ('[' * 100000 + ']' * 100000, 'is not JSON: RecursionError'),  # (was a traceback)
    ],
)
def test_a_bad_plan_file_says_what_is_wrong(tmp_path, text, said):
    path = tmp_path / 'plan.json'
    path.write_text(text)
    with pytest.raises(PlanError, match=said.replace('(', r'\(').replace(')', r'\)')):
        read_plan(path)
    with pytest.raises(PlanError, match='does not exist'):
        read_plan(tmp_path / 'none.json')


def test_a_plan_file_gives_its_layouts_in_order(tmp_path):
    path = tmp_path / 'plan.json'
    path.write_text(json.dumps({'layouts': [{'task': 'b', 'seed': 2}, {'task': 'a', 'seed': 1}]}))
    assert read_plan(path) == [('b', 2), ('a', 1)]
