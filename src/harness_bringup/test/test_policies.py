"""The learned half end to end: run_policy as a bounded execution on a real graph (worker,
skill server) against policies served over the real protocol, then whole episodes through
`harness run --policies` with the stand-in Messages API: the strategy-first refusal, the
post-policy countdown in each turn, policy-to-end and the driver's finish."""

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from harness_bringup.cli import main
from harness_bringup.station_graph import StationGraph
from harness_policy.catalog import load_catalog
from harness_skills.skill_table import SKILLS
from harness_types.convert import execution_of
from harness_types.wait import wait_future
from messages_server import MessagesServer
from policy_stand_ins import ReachPolicy, catalog, expert_catalogue, serve
from test_episodes import CONFIG, MODEL, of_type, text_of

os.environ.setdefault('MUJOCO_GL', 'egl')


def entry(endpoint, stall=1.0, cameras=('cam_head',), keys=None):
    return {
        'name': 'reach',
        'endpoint': endpoint,
        'action_hz': 25.0,
        'cameras': list(cameras),
        'depth': False,
        'stall_seconds': stall,
        'timeout_seconds': 5.0,
        'observation_keys': keys or {},
    }


class Graph(StationGraph):
    def __enter__(self):
        super().__enter__()
        self.action = self.action_client(SKILLS['run_policy'].action, 'skills/run_policy')
        assert self.action.wait_for_server(timeout_sec=10)
        return self

    def run_policy(self, endpoint, max_seconds=20.0, **kw):
        args = dict(
            name='reach', instruction='turn', max_seconds=max_seconds, region=None, to_end=False
        )
        args.update(entry=entry(endpoint, **kw))
        goal = SKILLS['run_policy'].goal(args)
        handle = wait_future(self.action.send_goal_async(goal), 60.0)
        return execution_of(wait_future(handle.get_result_async(), 120.0).result.execution)


@pytest.fixture(scope='module')
def graph():
    with Graph('client') as g:
        yield g


def test_the_policy_says_done_and_its_chunks_are_counted(graph):
    graph.reset('lift_cube', 0)
    with serve(ReachPolicy) as server:
        e = graph.run_policy(server.url)
    assert e.event == 'COMPLETED' and 'said it is done: "joint 1 reached"' in e.detail, e
    # 0.3 rad at 0.02 a step from the measured joint, which lags the command a little
    assert e.chunks in (3, 4) and e.actions == len(e.trace) == 5 * e.chunks
    assert abs(e.trace[-1].command[0] - 0.3) < 1e-6


def test_a_policy_that_never_says_done_stalls(graph):
    graph.reset('lift_cube', 0)
    with serve(lambda: ReachPolicy(done=False)) as server:
        e = graph.run_policy(server.url, stall=1.0)
    assert e.event == 'COMPLETED' and 'stalled' in e.detail, e
    # 15 actions of motion, then still for 1 s (25 ticks) once the arm settled.
    assert 25 + 15 <= len(e.trace) <= 25 + 15 + 10 and e.chunks > 3


def test_the_time_bound_and_the_shield_apply_to_every_action(graph):
    graph.reset('lift_cube', 0)
    with serve(lambda: ReachPolicy(done=False)) as server:
        e = graph.run_policy(server.url, max_seconds=0.4, stall=30.0)
    assert e.event == 'TIMEOUT' and len(e.trace) == 10
    graph.reset('lift_cube', 0)
    with serve(lambda: ReachPolicy(jump=True)) as server:
        e = graph.run_policy(server.url)
    assert e.event == 'SHIELD_REJECTED' and e.actions == 1, e


def test_a_policy_out_of_protocol_or_unreachable_is_a_skill_error(graph):
    graph.reset('lift_cube', 0)
    with serve(lambda: ReachPolicy(done=False, bad_after=1)) as server:
        e = graph.run_policy(server.url)
    assert e.event == 'SKILL_ERROR' and 'out of protocol' in e.detail and '(3, 5)' in e.detail
    e = graph.run_policy('ws://127.0.0.1:9')
    assert e.event == 'SKILL_ERROR' and 'ws://127.0.0.1:9' in e.detail and e.actions == 0


class StockNames(ReachPolicy):
    """A server with a stock openpi example's names: `observation/image` and
    `observation/joint_position`, nothing of the harness's."""

    def infer(self, obs: dict) -> dict:
        if 'observation/image' not in obs or 'observation/state' in obs:
            raise ValueError(f'expected observation/image, got {sorted(obs)}')
        image = obs['observation/image']
        assert image.ndim == 3 and image.shape[2] == 3
        return super().infer({'observation/state': obs['observation/joint_position']})


def test_a_stock_servers_observation_names_come_from_the_catalogue(graph):
    graph.reset('lift_cube', 0)
    with serve(lambda: StockNames(done=True)) as server:
        e = graph.run_policy(server.url)  # the harness's names: the server refuses them
        assert e.event == 'SKILL_ERROR' and 'expected observation/image' in e.detail
        keys = {
            'observation/images/cam_head': 'observation/image',
            'observation/state': 'observation/joint_position',
        }
        e = graph.run_policy(server.url, keys=keys)
    assert e.event == 'COMPLETED' and e.chunks >= 3, e.detail


def test_a_server_that_dies_mid_run_ends_the_execution_and_the_station_goes_on(graph):
    graph.reset('lift_cube', 0)
    servers = []

    class Dying(ReachPolicy):
        def infer(self, obs):
            out = super().infer(obs)
            if self.chunks == 3:  # the server goes away while its third reply is on the way
                threading.Thread(target=servers[0].stop).start()
            return out

    servers.append(serve(lambda: Dying(target=1.0, done=False)))
    e = graph.run_policy(servers[0].url, max_seconds=60.0, stall=30.0)
    assert e.event == 'SKILL_ERROR' and servers[0].url in e.detail, e
    assert e.chunks in (2, 3) and e.actions == 5 * e.chunks
    with serve(ReachPolicy) as again:  # the skill server serves the next run as usual
        assert graph.run_policy(again.url).event == 'COMPLETED'


# Whole episodes -----------------------------------------------------------------------------

MOVE_FIRST = 'I will lift the cube.\n<python>\nhome()\n</python>'
START_C = (
    'A policy learned stacking but does not usually finish it: C.\n<python>\n'
    "print(start('C', 'stack'))\non('*', lambda e: True)\n"
    "r = run_policy('reach', 'turn the left arm', max_seconds=0.4)\nprint(r)\n</python>"
)
LOOK = 'Looking.\n<python>\nprint(state().left.joints.round(3))\n</python>'


def policies_episode(tmp_path, monkeypatch, replies, endpoint, task='stack_blocks_two'):
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    file = catalog(tmp_path / 'policies.yaml', endpoint)
    out = tmp_path / 'runs'
    with MessagesServer(replies) as server:
        monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url)
        code = main(
            ['--config', CONFIG, 'run', task, '--model', MODEL, '--out', str(out)]
            + ['--policies', file]
        )
    (folder,) = out.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    return code, summary, events, server


def test_strategy_first_then_the_countdown_then_policy_to_end_and_the_driver_finishes(
    tmp_path, monkeypatch
):
    with serve(ReachPolicy) as policy:
        replies = [MOVE_FIRST, START_C, LOOK, LOOK, LOOK, LOOK, LOOK]
        code, summary, events, server = policies_episode(tmp_path, monkeypatch, replies, policy.url)
    assert code == 0, summary
    cells = of_type(events, 'cell')
    assert cells[0]['status'] == 'escalated' and cells[0]['event'] == 'SKILL_ERROR'
    assert 'strategy first' in cells[0]['event_detail']
    # The system prompt has the learned half; the first turn report says why the motion failed.
    assert 'start(strategy, kind, instruction)' in server.requests[0]['system']
    assert 'run_policy(name' in server.requests[0]['system']
    # After the policy ran: 4 more calls, each turn saying how many are left.
    texts = [text_of(r).split('Cell status')[-1] for r in server.requests]
    assert 'Post-policy' not in texts[1]
    for n, text in zip((4, 3, 2, 1), texts[2:6], strict=True):
        assert f'Post-policy model calls left: {n} (strategy C)' in text
    assert summary['model_calls'] == 6
    (run,) = [r for r in of_type(events, 'policy_run') if r['call'] == 2]
    assert run['event'] == 'TIMEOUT' and run['chunks'] >= 1
    # Then the policy ran to the end (it says done) and the driver finished the episode.
    (to_end,) = of_type(events, 'policy_to_end')
    assert to_end['executions'][0]['skill'] == 'run_policy'
    assert to_end['executions'][0]['event'] == 'COMPLETED'
    (finish,) = of_type(events, 'finish')
    assert finish['source'] == 'driver' and 'post-policy calls were used up' in finish['summary']
    assert summary['status'] == 'finished' and of_type(events, 'wrap_up')
    assert summary['strategy'] == {
        'policies': True,
        'forced': None,  # the model chose
        'choice': 'C',
        'kind': 'stack',
        'policy_runs': 2,
        'post_policy_calls_left': 0,
    }


PREDICT = """
print(start('A', 'lift'))
import numpy as np
q = state()
row = np.r_[q.left.joints, q.left.gripper, q.right.joints, q.right.gripper]
rows = np.tile(row, (25, 1))
rows[:, 7] = np.linspace(0.0, 0.3, 25)
p = predict_future(actions=rows, seconds=1.0)
print('actions:', p['model'][:14], p['states'].shape, round(float(p['states'][-1][7]), 2))
print('seen:', sorted(o.label for o in p['objects']), {k: v.shape for k, v in p['images'].items()})
p = predict_future('reach', instruction='turn', seconds=4.0)
print('policy:', p['stopped'], round(float(p['states'][-1][0]), 2))
after = state()
print('moved:', float(abs(after.right.joints[0]) + abs(after.left.joints[0])))
run = run_policy(name='reach', instruction='turn')
print('ran:', run.event, run.chunks)
"""


def test_predict_future_moves_nothing_and_shadow_mode_scores_the_run(tmp_path):
    with serve(ReachPolicy) as policy:
        config = tmp_path / 'harness.yaml'
        text = open(CONFIG).read().replace('world_model_shadow: false', 'world_model_shadow: true')
        folder = os.path.dirname(CONFIG)
        text = text.replace('../prompts/', f'{folder}/../prompts/')
        text = text.replace(' outcome_model.json', f' {folder}/outcome_model.json')
        config.write_text(text.replace(' models.yaml', f' {folder}/models.yaml'))
        program = tmp_path / 'predict.py'
        program.write_text(PREDICT)
        file = catalog(tmp_path / 'policies.yaml', policy.url)
        out = tmp_path / 'runs'
        code = main(
            ['--config', str(config), 'program', 'lift_cube', str(program), '--out', str(out)]
            + ['--policies', file]
        )
    assert code == 0
    (folder,) = out.iterdir()
    (cell,) = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    assert cell['status'] == 'ok', cell
    output = cell['output']
    assert 'actions: simulated_copy (25, 14) 0.3' in output
    assert "seen: ['red cube'] {'cam_head': (480, 640, 3)}" in output
    assert 'policy: the policy said it is done 0.3' in output and 'moved: 0.0' in output
    assert 'ran: COMPLETED' in output
    log = [json.loads(line) for line in (folder / 'kernel.log').read_text().splitlines()]
    (shadow,) = [e['shadow_prediction'] for e in log if e.get('shadow_prediction')]
    assert shadow['model'].startswith('simulated_copy') and shadow['run_event'] == 'COMPLETED'
    (cube,) = shadow['objects']
    assert cube['id'] == 'red_cube' and cube['error_m'] < 0.005


# The scripted baseline with the shipped catalogue: the broker starts the scripted expert ------


def scripted(tmp_path, task, *flags):
    out = tmp_path / task
    code = main(
        ['--config', CONFIG, 'run', task, '--model', 'scripted', '--out', str(out), '--policies']
        + list(flags)
    )
    (folder,) = out.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    return code, summary, events


def shipped_catalogue(tmp_path, finishes=None) -> tuple[str, str]:
    """The shipped catalogue at a free port (a developer's `harness up` may hold the shipped
    one), optionally with other `finishes`; (its path, the expert's endpoint)."""
    import socket

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    file = expert_catalogue(tmp_path, port, finishes)
    return str(file), f'ws://127.0.0.1:{port}'


def test_strategy_a_the_expert_does_the_task_in_two_calls_and_b_picks_by_number(tmp_path):
    file, endpoint = shipped_catalogue(tmp_path)
    code, summary, events = scripted(tmp_path, 'stack_blocks_two', file)
    assert code == 0 and summary['outcome']['success'], summary
    assert summary['strategy']['choice'] == 'A' and summary['strategy']['kind'] == 'stack'
    assert summary['model_calls'] == 2  # start + run_policy, then finish
    (run,) = of_type(events, 'policy_run')
    assert run['event'] == 'COMPLETED' and run['chunks'] > 10
    # The expert's server was started for this run and is stopped again.
    from harness_bringup.policy_broker import answers

    assert not answers(endpoint, timeout_s=1.0)
    code, summary, events = scripted(tmp_path, 'pick_numbered', file, '--layout', '1')
    assert code == 0 and summary['outcome']['success'], summary
    assert summary['strategy']['choice'] == 'B' and of_type(events, 'policy_run') == []


def test_an_unreachable_policy_server_makes_the_episode_not_run(tmp_path):
    """A server that cannot be reached is the service's failure, not the task's: the episode's
    status is policy_service_failed, which the bench counts as not run."""
    import socket

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    file = tmp_path / 'policies.yaml'
    file.write_text(
        'policies:\n  gone:\n    description: An external policy that is not running.\n'
        f'    endpoint: ws://127.0.0.1:{port}\n    learned: [lift]\n    finishes: [lift]\n'
    )
    code, summary, events = scripted(tmp_path, 'lift_cube', str(file))
    assert summary['status'] == 'policy_service_failed', summary
    assert (
        summary['detail'].startswith('the policy service failed: ')
        and str(port) in (summary['detail'])
    )
    assert code == 1
    runs = of_type(events, 'policy_run')
    assert runs and all(r['event'] == 'SKILL_ERROR' for r in runs)
    from harness_recording.bench_table import bench_tables

    assert bench_tables([summary])['overall']['not_run'] == 1
    # ... and so does harness program's run of it (it said the cell's status)
    program = tmp_path / 'prog.py'
    program.write_text(
        "on('*', lambda e: None)\nstart('C', 'lift')\nrun_policy('gone', 'lift the red cube')\n"
    )
    config = str(Path(__file__).resolve().parents[3] / 'config' / 'harness.yaml')
    argv = ['--config', config, 'program', 'lift_cube', str(program), '--policies', str(file)]
    main([*argv, '--out', str(tmp_path / 'programs')])
    (run,) = (tmp_path / 'programs').iterdir()
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'policy_service_failed', summary


def test_strategy_c_the_expert_first_then_the_reference_program_finishes(tmp_path):
    file, _ = shipped_catalogue(
        tmp_path, finishes=['lift', 'place', 'press', 'push', 'sort', 'handover']
    )
    assert 'stack' not in load_catalog(file).get('scripted_expert').finishes
    code, summary, events = scripted(tmp_path, 'stack_blocks_two', file)
    assert code == 0 and summary['outcome']['success'], summary
    assert summary['strategy']['choice'] == 'C' and summary['strategy']['policy_runs'] == 1
    cells = of_type(events, 'cell')
    assert [r['call'] for r in of_type(events, 'policy_run')] == [1]
    # After the policy's cell, the programs: home and the reference program's pick and place.
    skills = [e['skill'] for c in cells[1:] for e in c['executions']]
    assert skills[0] == 'home' and 'close_gripper' in skills
    assert summary['strategy']['post_policy_calls_left'] >= 0
    assert of_type(events, 'policy_to_end') == []


def test_harness_up_keeps_the_local_servers_up_until_it_is_stopped(tmp_path):
    import signal
    import subprocess
    import sys

    from harness_bringup.policy_broker import answers

    file, endpoint = shipped_catalogue(tmp_path)
    up = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', '--config', CONFIG, 'up']
        + ['--policies', file],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        for line in up.stdout:  # the broker waits for the server before it says so
            lines.append(line)
            if 'serving; Ctrl-C stops' in line:
                break
        assert any(f'{endpoint}: started' in line for line in lines), lines
        assert answers(endpoint)
        # An episode now finds the server answering and starts none of its own.
        from harness_bringup.policy_broker import PolicyBroker
        from harness_policy.catalog import load_catalog

        with PolicyBroker(load_catalog(file), log=lambda m: None) as broker:
            assert broker.ensure() == []
        # A second `up` starts none and holds nothing: it says so and ends.
        again = subprocess.run(
            [sys.executable, '-m', 'harness_bringup.cli', '--config', CONFIG, 'up']
            + ['--policies', file],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0 and 'none started here' in again.stdout, again.stdout
    finally:
        up.send_signal(signal.SIGTERM)
        rest = up.communicate(timeout=60)[0]
    assert up.returncode == 0, rest
    assert 'stopped policy server scripted_expert' in rest
    assert not answers(endpoint, timeout_s=1.0)


def test_a_broker_killed_without_its_clean_up_leaves_no_server(tmp_path):
    import subprocess
    import sys
    import time

    from harness_bringup.policy_broker import healthy

    file, endpoint = shipped_catalogue(tmp_path)
    script = (
        'import os\n'
        'from harness_bringup.policy_broker import PolicyBroker\n'
        'from harness_policy.catalog import load_catalog\n'
        f'broker = PolicyBroker(load_catalog({file!r}), log=print)\n'
        'assert broker.ensure() == ["scripted_expert"]\n'
        'os._exit(9)  # no clean-up: as if killed\n'
    )
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True)
    assert done.returncode == 9, done.stdout + done.stderr
    for _ in range(100):  # the server got SIGTERM when the broker's process died
        if not healthy(endpoint, timeout_s=0.5):
            break
        time.sleep(0.1)
    assert not healthy(endpoint, timeout_s=0.5)


def test_another_server_on_a_local_policys_port_is_refused_not_used(tmp_path):
    """The fixed port of a local server taken by someone else's policy server: the broker asks
    the server answering who it is (its metadata) and refuses it in one line, instead of
    running the episode against a policy the catalogue does not describe."""
    from harness_bringup.policy_broker import BrokerError, PolicyBroker
    from harness_policy.catalog import load_catalog

    with serve(lambda: ReachPolicy(done=True), {'name': 'someone_elses'}) as server:
        port = server.port
        file, _ = shipped_catalogue(tmp_path)
        text = open(file).read()
        endpoint = next(w for w in text.split() if w.startswith('ws://127.0.0.1:'))
        open(file, 'w').write(text.replace(endpoint, f'ws://127.0.0.1:{port}'))
        with (
            PolicyBroker(load_catalog(file), log=lambda m: None) as broker,
            pytest.raises(
                BrokerError, match="is not policy scripted_expert: it says it is 'someone_elses'"
            ),
        ):
            broker.ensure()


def test_a_local_server_of_port_0_gets_a_free_port_its_episodes_read(tmp_path):
    """The shipped catalogue's local server has port 0: the broker starts it on a free port
    and the processes started after that (the episodes, their kernel) read that endpoint from
    the catalogue; a broker in another process (another user's bench) gets another port, and
    nothing is left behind."""
    import subprocess
    import sys

    from harness_bringup.policy_broker import PolicyBroker, answers
    from harness_policy.catalog import ENDPOINTS_ENV, load_catalog

    shipped = str(expert_catalogue(tmp_path))  # its entry as shipped: port 0
    assert load_catalog(shipped).get('scripted_expert').endpoint == 'ws://127.0.0.1:0'
    assert ENDPOINTS_ENV not in os.environ
    read = (
        'from harness_policy.catalog import load_catalog\n'
        f'print(load_catalog({shipped!r}).get("scripted_expert").endpoint)'
    )
    other = (
        'import os\n'
        'from harness_bringup.policy_broker import PolicyBroker, answers\n'
        'from harness_policy.catalog import ENDPOINTS_ENV, load_catalog\n'
        'os.environ.pop(ENDPOINTS_ENV, None)  # another user: none of ours\n'
        f'with PolicyBroker(load_catalog({shipped!r}), log=lambda m: None) as b:\n'
        '    assert b.ensure() == ["scripted_expert"]\n'
        '    print(b.endpoints["scripted_expert"], answers(b.endpoints["scripted_expert"]))\n'
    )
    with PolicyBroker(load_catalog(shipped), log=lambda m: None) as broker:
        assert broker.ensure() == ['scripted_expert']
        mine = broker.endpoints['scripted_expert']
        assert answers(mine) and json.loads(os.environ[ENDPOINTS_ENV]) == {'scripted_expert': mine}
        run = [sys.executable, '-c']
        seen = subprocess.run([*run, read], capture_output=True, text=True, check=True)
        assert seen.stdout.strip() == mine
        theirs = subprocess.run([*run, other], capture_output=True, text=True, check=True)
        endpoint, answered = theirs.stdout.strip().splitlines()[-1].split()
        assert endpoint != mine and answered == 'True'
    assert ENDPOINTS_ENV not in os.environ
    assert not answers(mine, timeout_s=1.0) and not answers(endpoint, timeout_s=1.0)


@pytest.mark.skipif(
    __import__('harness_policy.learning_env').learning_env.learning_python() is None,
    reason='the learning extra is not installed (tools/setup.sh --learning)',
)
def test_the_shipped_trained_policy_does_lift_cube_alone(tmp_path):
    """The default catalogue's learned entry is a trained checkpoint: the scripted baseline
    hands lift_cube to it (strategy A) and it lifts the cube from the start pose, served by the
    broker over the openpi protocol in the learning extra."""
    code, summary, events = scripted(tmp_path, 'lift_cube')
    assert code == 0 and summary['outcome']['success'], summary
    assert summary['strategy']['choice'] == 'A' and summary['model_calls'] == 1
    (run,) = of_type(events, 'policy_run')
    assert run['event'] == 'EPISODE_ENDED' and run['chunks'] >= 3  # 25 actions a chunk
    log = (tmp_path / 'lift_cube').glob('*/policy_act_lift_cube.log')
    assert 'learned: LeRobot act trained on 60 demonstrations' in next(log).read_text()


@pytest.mark.skipif(
    __import__('harness_policy.learning_env').learning_env.learning_python() is None,
    reason='the learning extra is not installed (tools/setup.sh --learning)',
)
def test_a_trained_policy_that_never_says_done_is_ended_by_the_stall_rule(tmp_path):
    """act_press_button never says done (openpi servers do not): its run ends when the arms
    have been still 5 s after moving, and the programs' turn comes."""
    import yaml

    shipped = yaml.safe_load(open(CONFIG.replace('harness.yaml', 'policies.yaml')))['policies']
    entry = dict(shipped['act_press_button'])
    entry['checkpoint'] = str(Path(CONFIG).parents[1] / 'policies' / 'act_press_button')
    file = tmp_path / 'policies.yaml'
    file.write_text(yaml.safe_dump({'policies': {'act_press_button': entry}}))
    code, summary, events = scripted(tmp_path, 'press_button', str(file), '--strategy', 'A')
    assert code == 0 and summary['strategy']['choice'] == 'A', summary
    (run, *_) = of_type(events, 'policy_run')
    assert run['event'] == 'COMPLETED', run
    assert 'stalled: the arms were still for 5 s after moving' in run['detail']
    assert run['chunks'] >= 4  # it moved: chunks of 25 actions, then stood still


@pytest.mark.skipif(
    __import__('harness_policy.learning_env').learning_env.learning_python() is None,
    reason='the learning extra is not installed (tools/setup.sh --learning)',
)
def test_the_gate_adopts_a_trained_policy_in_place_of_the_programs(tmp_path):
    """`harness policy adopt` end to end: the shipped lift_cube checkpoint as a candidate (its
    demonstrations said to be seeds 1000-1001) against the programs alone on one held-out
    layout; it finishes its run, so the catalogue gets it as version 1 (a copy of its weights),
    the log a line, and a seed it trained on is refused before anything runs."""
    import shutil
    from dataclasses import replace

    import yaml
    from harness_learning.training import RECORD
    from harness_recording.lerobot import write_datasets

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'harness_learning' / 'test'))
    from demos import demo

    root = Path(CONFIG).parents[1]
    candidate = shutil.copytree(root / 'policies' / 'act_lift_cube', tmp_path / 'candidate')
    trials = [demo(6, k) for k in range(2)]
    trials = [
        replace(t, meta=t.meta | {'task_name': 'lift_cube', 'layout': -1, 'seed': 1000 + k})
        for k, t in enumerate(trials)
    ]
    write_datasets(tmp_path / 'demos', trials)
    record = json.loads((candidate / RECORD).read_text()) | {'dataset': str(tmp_path / 'demos')}
    (candidate / RECORD).write_text(json.dumps(record))
    shipped = yaml.safe_load((root / 'config' / 'policies.yaml').read_text())['policies']
    kept = {'act_press_button': shipped['act_press_button']}
    kept['act_press_button']['checkpoint'] = str(root / 'policies' / 'act_press_button')
    catalogue = tmp_path / 'cat' / 'policies.yaml'
    catalogue.parent.mkdir()
    catalogue.write_text('# mine\n' + yaml.safe_dump({'policies': kept}, sort_keys=False))
    argv = ['--config', CONFIG, 'policy', 'adopt', str(candidate), '--for', 'lift_cube']
    argv += ['--policies', str(catalogue), '--layouts', 'random:1']
    assert main([*argv, '--seed-base', '1001', '--out', str(tmp_path / 'no')]) == 2
    assert main([*argv, '--seed-base', '9000', '--out', str(tmp_path / 'gate')]) == 0
    (line,) = (tmp_path / 'cat' / 'adoption_log.jsonl').read_text().splitlines()
    decision = json.loads(line)
    assert decision['adopted'] and decision['seeds'] == [9000], decision
    assert decision['candidate_figures']['finished_runs'] == 1
    assert decision['incumbent'] == 'incumbent: the programs alone'
    spec = load_catalog(catalogue).get('act_lift_cube')
    assert spec.version == 1 and spec.checkpoint == str(
        tmp_path / 'cat' / 'policies' / 'act_lift_cube-v1'
    )
    assert (Path(spec.checkpoint) / RECORD).is_file() and catalogue.read_text().startswith('# mine')
    assert 'adopted by the gate' in spec.description


def test_harness_up_serves_kernel_policies_and_says_a_port_0_server_is_its_own(tmp_path):
    """Without --policies, `up` serves the config's kernel.policies (as `policy serve` does);
    a server it starts at a catalogue port of 0 is said to be unknown to later commands."""
    import signal
    import subprocess
    import sys

    import yaml

    file = expert_catalogue(tmp_path, 0)
    config = yaml.safe_load(Path(CONFIG).read_text())
    config['kernel']['ros__parameters']['policies'] = str(file)
    driver = config['driver']['ros__parameters']
    for key in ('prompts', 'price_table', 'outcome_model'):  # (relative to the shipped file)
        driver[key] = str((Path(CONFIG).parent / driver[key]).resolve())
    (tmp_path / 'harness.yaml').write_text(yaml.safe_dump(config))
    up = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', '--config', str(tmp_path / 'harness.yaml')]
        + ['up'],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in up.stdout:
            lines.append(line)
            if 'serving; Ctrl-C stops' in line:
                break
        # its server ends (as one that can take no connection more exits): `up` says so and
        # starts it again (it had gone on holding nothing, saying nothing)
        (server,) = [
            int(p.name)
            for p in Path('/proc').glob('[0-9]*')
            if str(file) in _command_line(p) and 'serve' in _command_line(p)
        ]
        os.kill(server, signal.SIGKILL)
        for line in up.stdout:
            lines.append(line)
            if 'starting policy server scripted_expert' in line:
                break
    finally:
        up.send_signal(signal.SIGTERM)
        lines.append(up.communicate(timeout=60)[0])
    said = ''.join(lines)
    assert 'policy scripted_expert at ws://127.0.0.1:' in said and ': started' in said, said
    assert f'scripted_expert: port 0 in {file}, so later commands cannot find' in said, said
    assert 'policy server scripted_expert exited with status -9: starting it again' in said, said


def _command_line(process: Path) -> str:
    try:
        return (process / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return ''
