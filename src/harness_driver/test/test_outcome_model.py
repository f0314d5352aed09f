"""The outcome model (shadow mode): it learns to tell trials that succeeded from ones that did
not, its surprise stands out where the motion does not follow its command, a model file round-
trips and a bad one says why, the held-out split keeps a layout on one side, and the bench's
card leaves out the layouts it trained on."""

import json

import numpy as np
import pytest
from harness_driver.outcome_model import (
    OutcomeModelError,
    TrialSample,
    fit,
    held_out,
    load_model,
    report_card,
    report_markdown,
    shadow_card,
)


def trial(k: int, success: bool, task: str = 'lift_cube', bump: bool = False) -> TrialSample:
    """A lift: the arm's second joint follows its command up; a success ends with the gripper
    closed on something (0.5 open), a failure with it closed on nothing (0.0)."""
    rng = np.random.default_rng(k)
    n = 60
    command = np.zeros((n, 14))
    command[:, 1] = np.linspace(0, 0.6, n) + rng.normal(0, 0.01)
    command[:, 6] = np.r_[np.ones(n // 2), np.zeros(n - n // 2)]
    measured = command.copy()
    measured[1:, 1] = command[:-1, 1]  # one tick behind
    measured[n // 2 :, 6] = 0.5 if success else 0.0
    if bump:
        measured[40, 1] += 2.0  # something pushed the arm
    return TrialSample(task, np.arange(n) / 25.0, measured, command, None, success, (task, k))


def test_it_learns_to_tell_success_from_failure_and_its_card_counts_both():
    train = [trial(k, k % 3 != 0) for k in range(60)]
    model = fit(train)
    test = [trial(1000 + k, k % 2 == 0) for k in range(20)]
    card = report_card(model, test)
    assert card['all'] == {'true_pos': 10, 'true_neg': 10, 'false_pos': 0, 'false_neg': 0}
    text = report_markdown(card, 'held out')
    assert '| all | 20 | 10 | 10 | 0 | 0 | 0.00 | 0.00 |' in text
    assert model.trained['trials'] == 60 and model.trained['successes'] == 40


def test_surprise_stands_out_where_the_arm_did_not_follow_its_command():
    model = fit([trial(k, k % 3 != 0) for k in range(30)])
    surprise = model.surprise(trial(99, True, bump=True))
    assert int(np.argmax(surprise)) == 40 and surprise[40] > 10 * np.median(surprise)
    score = model.score(trial(99, True, bump=True))
    assert score['surprise_at_s'] == pytest.approx(40 / 25.0) and score['predicted'] == 'success'


def test_too_few_or_one_sided_trials_are_refused():
    with pytest.raises(OutcomeModelError, match='at least 10'):
        fit([trial(k, True) for k in range(5)])
    with pytest.raises(OutcomeModelError, match='the same outcome'):
        fit([trial(k, True) for k in range(12)])


def test_a_model_file_round_trips_and_a_bad_one_says_why(tmp_path):
    model = fit([trial(k, k % 3 != 0) for k in range(30)])
    path = tmp_path / 'm.json'
    path.write_text(json.dumps(model.to_json()))
    again = load_model(path)
    sample = trial(7, True)
    assert again.p_success(sample) == pytest.approx(model.p_success(sample))
    for text, said in (('{', 'is not JSON'), ('{"kind": "x"}', 'is not an outcome model')):
        path.write_text(text)
        with pytest.raises(OutcomeModelError, match=said):
            load_model(path)
    broken = model.to_json() | {'weights': [1.0]}
    path.write_text(json.dumps(broken))
    with pytest.raises(OutcomeModelError, match='do not fit together'):
        load_model(path)
    with pytest.raises(OutcomeModelError, match='does not exist'):
        load_model(tmp_path / 'none.json')


def test_a_layout_is_held_out_whatever_ran_on_it():
    share = [held_out(('lift_cube', s), f'run{s}', 0.25) for s in range(2000)]
    assert 0.2 < sum(share) / len(share) < 0.3
    assert held_out(('lift_cube', 5), 'a', 0.25) == held_out(('lift_cube', 5), 'b', 0.25)


def test_the_bench_card_leaves_out_the_layouts_it_trained_on(tmp_path):
    summaries = []
    for k, (truth, p, trained) in enumerate(
        [(True, 0.9, False), (False, 0.8, False), (False, 0.1, False), (True, 0.9, True)]
    ):
        run = tmp_path / f'r{k}'
        run.mkdir()
        score = {'p_success': p, 'trained_on_layout': trained}
        event = {'type': 'trial', 'trial_id': 'episode', 'outcome_model': score}
        (run / 'events.jsonl').write_text(json.dumps(event) + '\n')
        summary = {'task': 'lift_cube', 'outcome': {'success': truth}, 'run_folder': str(run)}
        summaries.append(summary)
    not_run = {'task': 'lift_cube', 'status': 'policy_service_failed'}  # no run folder
    card = shadow_card([*summaries, not_run])
    assert card['card']['all'] == {'true_pos': 1, 'true_neg': 1, 'false_pos': 1, 'false_neg': 0}
    assert card['left_out_trained_layouts'] == 1
    assert shadow_card([]) is None
