"""End to end: whole episodes through `harness run` with the real `anthropic` client against a
local stand-in Messages API server, and with the scripted baseline. Each test checks the run
folder: summary.json (status, decisions by reason, tokens, cost) and events.jsonl."""

import json
import os
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from harness_bringup.cli import main
from harness_types.reply import REASONS
from messages_server import MessagesServer, Scripted, overloaded
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / 'config' / 'harness.yaml')
MODEL = 'claude-sonnet-5-5'  # $2 / $10 per million tokens in config/models.yaml

PICK = """I will grasp the cube and lift it.
<python>
cube = locate('red cube')[0]
grip = pick(cube, lift=0.15)
print('holding', grip.object_id)
</python>"""
FINISH = 'The cube is up.\n<finish>the cube is held above the table</finish>'
# Lifted 15 cm: the task succeeds during the cell and the episode ends there (the bench's rule).
PICK_HIGH = PICK
# Lifted 5 cm: not yet the task's 10 cm, so the episode goes on after the cell.
PICK = PICK.replace('lift=0.15', 'lift=0.05')


def episode(tmp_path, monkeypatch, server, *flags, model=MODEL):
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url if server else 'http://127.0.0.1:9')
    code = main(
        ['--config', CONFIG, 'run', 'lift_cube', '--model', model, '--out', str(tmp_path), *flags]
    )
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    return code, summary, events, folder


def decisions(**nonzero):
    out = dict.fromkeys(REASONS, 0)
    out.update(nonzero)
    return out


def of_type(events, kind):
    return [e for e in events if e['type'] == kind]


def text_of(request) -> str:
    parts = []
    for m in request['messages']:
        content = m['content']
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get('text', '') for b in content if b['type'] == 'text']
    return '\n'.join(parts)


def test_the_episode_ends_when_the_task_succeeds(tmp_path, monkeypatch):
    with MessagesServer([PICK_HIGH, FINISH]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'episode_ended', summary
    assert summary['outcome']['success'] and summary['model_calls'] == 1
    assert summary['decisions'] == decisions(start=1)
    (cell,) = of_type(events, 'cell')
    assert cell['status'] == 'episode_ended' and cell['event'] == 'EPISODE_ENDED'
    assert 'the task succeeded' in cell['event_detail']
    assert of_type(events, 'wrap_up') == []
    # start-up and closing by step (what a bench's fixed cost per episode is made of)
    parts, phases = summary['phase_parts_seconds'], summary['phases_seconds']
    steps = {
        'start_up': ['kernel', 'reset', 'first_request', 'goal_judged'],
        'closing': ['goal_judged', 'trial_and_end_events', 'recording_closed'],
    }
    assert {phase: list(named) for phase, named in parts.items()} == steps
    for phase, named in parts.items():
        assert all(v >= 0 for v in named.values()), parts
        assert 0 < sum(named.values()) <= phases[phase] + 0.005, (parts, phases)


def test_finish_in_two_calls_and_the_turn_report(tmp_path, monkeypatch):
    with MessagesServer([Scripted(PICK, 1000, 50), Scripted(FINISH, 2000, 10)]) as server:
        code, summary, events, folder = episode(tmp_path, monkeypatch, server)
    assert code == 0
    assert summary['status'] == 'finished', summary
    assert summary['decisions'] == decisions(start=1, program_end=1)
    assert summary['tokens'] == {'input': 3000, 'output': 60}
    assert summary['cost_usd'] == pytest.approx((3000 * 2 + 60 * 10) / 1e6)
    assert summary['baseline'] is False
    # The first request: the system prompt documents the API, the message has the task and a view.
    first = server.requests[0]
    assert 'pick(obj' in first['system'] and first['model'] == MODEL
    assert 'Pick up the red cube' in text_of(first)
    assert any(b['type'] == 'image' for b in first['messages'][0]['content'])
    # The second: the turn report of the cell.
    report = text_of(server.requests[1])
    assert 'Cell status: ok' in report and 'holding red_cube' in report
    assert 'red_cube "red cube"' in report and 'left holds red_cube' in report
    requests = of_type(events, 'model_request')
    assert [r['reason'] for r in requests] == ['start', 'program_end']
    assert all((folder / f).is_file() for r in requests for f in r['image_files'])
    (cell,) = of_type(events, 'cell')
    assert cell['status'] == 'ok' and [e['skill'] for e in cell['executions']][:1] == ['move_eef']
    assert cell['scene']['holds']['left'] == 'red_cube'
    # Homing with the cube in hand lifts it past 10 cm: the task succeeds in the wrap-up.
    assert of_type(events, 'wrap_up')[0]['status'] == 'episode_ended'
    log = (folder / 'kernel.log').read_text()
    assert log.count('"call": "pick"') == 1
    # pick's locate() at the start took the pass the verifier ran on the same views
    (passes,) = [
        e['perception_passes']
        for e in map(json.loads, log.splitlines())
        if 'perception_passes' in e
    ]
    assert passes.get('shared', 0) >= 1, passes
    # The images the model saw, in the bag stamped with the episode's time they were sent at
    # (all had been stamped 0): the start's at 0, the turn report's after the cell's motion.
    store = get_typestore(Stores.ROS2_KILTED)
    with Reader(folder / 'bag') as bag:
        images = [c for c in bag.connections if c.topic == '/harness/model_images']
        stamps = {
            store.deserialize_cdr(raw, c.msgtype).header.frame_id: seconds(
                store.deserialize_cdr(raw, c.msgtype).header.stamp
            )
            for c, _, raw in bag.messages(connections=images)
        }
    first_sent, then_sent = (r['image_files'] for r in requests)
    assert {stamps[f] for f in first_sent} == {0.0}
    assert min(stamps[f] for f in then_sent) > 1.0, stamps


def seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def test_format_error_then_a_valid_reply_cleans_the_history(tmp_path, monkeypatch):
    bad = 'I think I should pick the cube first, then lift it.'
    with MessagesServer([bad, PICK, FINISH]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'finished', summary
    assert summary['decisions'] == decisions(start=1, format=1, program_end=1)
    second, third = text_of(server.requests[1]), text_of(server.requests[2])
    assert 'Format error' in second and 'Nothing ran' in second
    assert bad in json.dumps(server.requests[1]['messages'])
    # Once the valid reply arrived, the bad exchange left the history.
    assert 'Format error' not in third and bad not in json.dumps(server.requests[2]['messages'])
    assert len(server.requests[2]['messages']) == 3
    assert [r['reason'] for r in of_type(events, 'model_request')] == [
        'start',
        'format',
        'program_end',
    ]
    assert len(of_type(events, 'cell')) == 1  # the bad reply ran nothing


def test_an_escalation_is_handled_by_the_next_program(tmp_path, monkeypatch):
    out_of_limits = "<python>\nmove_joints([0, 0, 0, 0, 0, 9.0], arm='left')\n</python>"
    with MessagesServer([out_of_limits, PICK_HIGH]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'episode_ended', summary
    assert summary['outcome']['success'], summary
    assert summary['decisions'] == decisions(start=1, escalation=1)
    assert summary['events_escalated'] == 1
    first, second = of_type(events, 'cell')
    assert first['status'] == 'escalated' and first['event']
    assert second['status'] == 'episode_ended'
    report = text_of(server.requests[1])
    assert 'Cell status: escalated' in report and f'Stopped by event {first["event"]}' in report


def test_the_skills_rung_serves_one_api_call_a_reply_however_it_is_written(tmp_path, monkeypatch):
    """A <call> of one statement could still make several calls (exec, a comprehension):
    the kernel serves the first and refuses the rest, and the task is not done in one reply."""
    bypass = '<call>exec("c = locate(\'red cube\')[0]\\ng = pick(c, lift=0.15)")</call>'
    with MessagesServer([bypass, FINISH]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server, '--interface', 'skills')
    cell = of_type(events, 'cell')[0]
    assert cell['status'] == 'error', cell
    assert 'pick() refused: this cell may make 1 API call' in cell['traceback'], cell
    assert not summary['outcome']['success'] and summary['model_calls'] == 2


def test_the_call_budget_ends_the_episode(tmp_path, monkeypatch):
    with MessagesServer(["<python>\nprint('looking')\n</python>"]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server, '--max-model-calls', '3')
    assert code == 0 and summary['status'] == 'budget_exhausted', summary
    assert summary['model_calls'] == 3 and len(server.requests) == 3
    assert summary['decisions'] == decisions(start=1, program_end=2)
    assert 'Model calls left: 1.' in text_of(server.requests[2])
    assert of_type(events, 'wrap_up') == []  # no finish, no wrap-up
    assert summary['outcome'] is not None and not summary['outcome']['success']


def test_the_cost_cap_ends_the_episode(tmp_path, monkeypatch):
    expensive = Scripted("<python>\nprint('looking')\n</python>", 1_000_000, 0)
    with MessagesServer([expensive]) as server:
        code, summary, _, _ = episode(tmp_path, monkeypatch, server, '--max-cost-usd', '1.5')
    assert code == 0 and summary['status'] == 'cost_exhausted', summary
    assert summary['model_calls'] == 1 and summary['cost_usd'] == pytest.approx(2.0)


def test_the_wall_time_cap_ends_the_episode(tmp_path, monkeypatch):
    slow = Scripted("<python>\nprint('looking')\n</python>", delay=1.5)
    with MessagesServer([slow]) as server:
        code, summary, _, _ = episode(tmp_path, monkeypatch, server, '--max-wall-seconds', '1')
    assert code == 0 and summary['status'] == 'wall_time_exhausted', summary
    assert summary['model_calls'] == 1


def test_verify_from_a_reply_and_from_a_program(tmp_path, monkeypatch):
    replies = [
        '<verify>the red cube stands on the table</verify>',
        "<python>\nv = verify('the cube is red')\nprint('verdict', v.yes, v.sentence)\n</python>",
        FINISH,
    ]
    verdicts = [
        Scripted('YES. The red cube stands on the table.', 500, 10),
        Scripted('NO - it looks orange to me.', 500, 10),
    ]
    with MessagesServer(replies, verdicts) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'finished', summary
    assert summary['decisions'] == decisions(start=1, verify=1, program_end=1)
    assert summary['verifier_calls'] == 2 and len(server.verifier_requests) == 2
    assert summary['tokens']['input'] == 3 * 100 + 2 * 500
    claim = server.verifier_requests[0]
    assert 'the red cube stands on the table' in text_of(claim)
    assert any(b['type'] == 'image' for b in claim['messages'][0]['content'])
    assert 'Verifier: YES. The red cube stands on the table.' in text_of(server.requests[1])
    checks = of_type(events, 'verify')
    assert [(c['source'], c['yes']) for c in checks] == [('reply', True), ('program', False)]
    (cell,) = of_type(events, 'cell')
    assert 'verdict False it looks orange to me.' in cell['output']


def test_a_programs_verify_is_answered_within_its_cells_time(tmp_path, monkeypatch):
    """The verifier's service is down: the program's verify() gets 'not answered' before its
    cell's timeout (5 s here), not after the episode's wall budget (1800 s)."""
    import yaml

    doc = yaml.safe_load(Path(CONFIG).read_text())
    driver = doc['driver']['ros__parameters']
    for key in ('prompts', 'price_table', 'outcome_model'):
        driver[key] = str((Path(CONFIG).parent / driver[key]).resolve())
    doc['kernel']['ros__parameters']['cell_timeout_seconds'] = 5.0
    config = tmp_path / 'harness.yaml'
    config.write_text(yaml.safe_dump(doc))
    program = (
        "<python>\nv = verify('the cube is red')\n"
        "print('verdict', v.answered, v.sentence)\n</python>"
    )
    out = tmp_path / 'runs'
    with MessagesServer([program, FINISH], [overloaded()]) as server:
        monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
        monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url)
        code = main(
            ['--config', str(config), 'run', 'lift_cube', '--model', MODEL, '--out', str(out)]
        )
    (folder,) = out.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    assert code == 0 and summary['status'] == 'finished', summary
    (check,) = of_type(events, 'verify')
    assert check['source'] == 'program' and not check['answered'], check
    assert "the program cell's time leaves no time for another" in check['sentence'], check
    (cell,) = of_type(events, 'cell')
    assert cell['status'] == 'ok' and 'verdict False the model service failed' in cell['output']


def _config(tmp_path, **driver_values):
    import yaml

    doc = yaml.safe_load(Path(CONFIG).read_text())
    driver = doc['driver']['ros__parameters']
    for key in ('prompts', 'price_table', 'outcome_model'):
        driver[key] = str((Path(CONFIG).parent / driver[key]).resolve())
    driver.update(driver_values)
    config = tmp_path / 'harness.yaml'
    config.write_text(yaml.safe_dump(doc))
    return config


def _run(tmp_path, monkeypatch, server, config):
    out = tmp_path / 'runs'
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url)
    code = main(['--config', str(config), 'run', 'lift_cube', '--model', MODEL, '--out', str(out)])
    (folder,) = out.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    events = [json.loads(line) for line in (folder / 'events.jsonl').read_text().splitlines()]
    return code, summary, events


def test_a_failing_verifier_is_bounded_by_its_own_time(tmp_path, monkeypatch):
    """A verifier answering 500 was retried for 28-31 s, bounded only by the episode's wall
    budget: driver.verifier_timeout_seconds bounds each verdict, then 'could not answer'."""
    config = _config(tmp_path, verifier_timeout_seconds=2.0)
    replies = ['<verify>the red cube stands on the table</verify>', FINISH]
    with MessagesServer(replies, [overloaded()] * 50) as server:
        code, summary, events = _run(tmp_path, monkeypatch, server, config)
    assert code == 0 and summary['status'] == 'finished', summary
    (check,) = of_type(events, 'verify')
    assert not check['answered'], check
    assert "the verifier's bound (driver.verifier_timeout_seconds)" in check['sentence'], check
    assert 'The verifier could not answer' in text_of(server.requests[1])
    # asked and not answered: counted (the summary had said 0 verifier calls and nothing else)
    assert check['asked'] and summary['verifier_requests_unanswered'] == 1, summary
    assert summary['verifier_calls'] == 0


def test_the_verifier_can_be_switched_off(tmp_path, monkeypatch):
    config = _config(tmp_path, verifier_enabled=False)
    replies = ["<python>\nv = verify('the cube is red')\nprint('verdict', v.sentence)\n</python>"]
    with MessagesServer([*replies, FINISH], [Scripted('YES.', 500, 10)]) as server:
        code, summary, events = _run(tmp_path, monkeypatch, server, config)
    assert code == 0 and summary['status'] == 'finished', summary
    assert server.verifier_requests == [] and summary['verifier_calls'] == 0
    (cell,) = of_type(events, 'cell')
    assert 'no verifier in this run (driver.verifier_enabled: false)' in cell['output']


def test_a_refusal_ends_the_episode_instead_of_asking_again(tmp_path, monkeypatch):
    refusal = Scripted('I cannot help with that.', stop_reason='refusal')
    with MessagesServer([refusal, PICK]) as server:
        code, summary, events, folder = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'model_refused', summary
    assert 'the model refused to go on (stop_reason refusal): I cannot help' in summary['detail']
    assert summary['model_calls'] == 1 and len(server.requests) == 1
    assert (folder / 'report.html').is_file()


def test_the_scripted_baseline_lifts_the_cube_and_the_bag_replays_it(tmp_path, monkeypatch):
    code, summary, events, folder = episode(tmp_path, monkeypatch, None, model='scripted')
    assert code == 0 and summary['status'] == 'episode_ended', summary
    assert summary['outcome']['success'] and summary['baseline'] is True
    assert 'scripted baseline' in summary['agent']
    assert summary['decisions'] == decisions(start=1)
    assert [c['status'] for c in of_type(events, 'cell')] == ['episode_ended']
    # The rosbag2: one /joint_states per tick (and the reset's), the driver's events as JSON.
    assert summary['bag'] == 'bag' and 'bag_error' not in summary
    # (the recorder matched every topic before the first tick: else the counts below cannot hold)
    assert 'bag_warning' not in summary, summary['bag_warning']
    store = get_typestore(Stores.ROS2_KILTED)
    with Reader(folder / 'bag') as bag:
        counts = {c.topic: c.msgcount for c in bag.connections}
        # Complete: a joint state for the reset and for every tick; every event line.
        assert counts['/joint_states'] == summary['env_steps'] + 1, counts
        assert counts['/tf'] > 0
        read = ('/harness/events', '/joint_states', '/skills/executions', '/harness/model_images')
        by_topic = {topic: [] for topic in read}
        for c, _, raw in bag.messages(connections=[c for c in bag.connections if c.topic in read]):
            by_topic[c.topic].append(store.deserialize_cdr(raw, c.msgtype))
    texts = [m.data for m in by_topic['/harness/events']]
    states = by_topic['/joint_states']
    executions = [json.loads(m.data) for m in by_topic['/skills/executions']]
    model_images = by_topic['/harness/model_images']
    assert texts == (folder / 'events.jsonl').read_text().splitlines()
    assert [json.loads(t)['type'] for t in texts][-1] == 'end'
    assert 'left_joint1' in states[-1].name and len(states[-1].position) == len(states[-1].name)
    # Each execution's start and end, in pairs; the images the model saw, as PNG files.
    starts = [e['id'] for e in executions if e['phase'] == 'start']
    assert starts and starts == [e['id'] for e in executions if e['phase'] == 'end']
    sent = [f for e in events if e['type'] == 'model_request' for f in e['image_files']]
    assert [m.header.frame_id for m in model_images] == sent
    assert bytes(model_images[0].data) == (folder / sent[0]).read_bytes()
    # The cameras at the configured rate, as JPEG with their calibration.
    every = 25
    # (at the reset and every 25 ticks after it)
    assert counts['/cameras/cam_head/image_raw/compressed'] == summary['env_steps'] // every + 1
    assert (
        counts['/cameras/cam_head/camera_info'] >= counts['/cameras/cam_head/image_raw/compressed']
    )
    bag_tf_tree_and_latched_description(folder / 'bag', store)


def bag_tf_tree_and_latched_description(path, store):
    """rviz can show the robot from the bag: the TF tree (/tf_static + /tf) has one root and
    reaches every link of the description and every camera's optical frame; the description
    and /tf_static are offered transient-local, so `ros2 bag play` republishes them latched."""
    with Reader(path) as bag:
        by_topic = {c.topic: c for c in bag.connections}
        for topic in ('/robot_description', '/tf_static', '/harness/events'):
            (qos,) = by_topic[topic].ext.offered_qos_profiles
            assert qos.durability.name == 'TRANSIENT_LOCAL', topic
        for topic in ('/harness/events', '/harness/model_images'):  # every one, as live
            (qos,) = by_topic[topic].ext.offered_qos_profiles
            assert (qos.durability.name, qos.history.name) == ('TRANSIENT_LOCAL', 'KEEP_ALL')
        assert by_topic['/tf'].ext.offered_qos_profiles[0].durability.name == 'VOLATILE'
        edges, urdf = {}, None
        for c, _, raw in bag.messages():
            if c.topic in ('/tf', '/tf_static'):
                for t in store.deserialize_cdr(raw, c.msgtype).transforms:
                    edges[t.child_frame_id] = t.header.frame_id
            elif c.topic == '/robot_description':
                urdf = store.deserialize_cdr(raw, c.msgtype).data
    roots = set(edges.values()) - set(edges)
    assert roots == {'world'}, roots
    links = {e.get('name') for e in ET.fromstring(urdf).findall('link')}
    cameras = {f'{cam}_optical' for cam in ('cam_head', 'cam_left_wrist', 'cam_right_wrist')}
    for frame in (links | cameras) - {'world'}:
        seen, at = set(), frame
        while at in edges and at not in seen:
            seen.add(at)
            at = edges[at]
        assert at == 'world', f'{frame} is not connected to the root (stops at {at})'


def test_the_scripted_actions_rung_replays_the_reference_episode(tmp_path):
    """R0's baseline: the reference program's episode runs first, then its motions are sent
    one <action> per reply, each a decision of reason `action`."""
    argv = ['--config', CONFIG, 'run', 'lift_cube', '--model', 'scripted', '--out']
    assert main([*argv, str(tmp_path), '--interface', 'actions']) == 0
    source, replay = sorted(tmp_path.iterdir())  # named by time: the source first
    summaries = [json.loads((f / 'summary.json').read_text()) for f in (source, replay)]
    assert [s['interface'] for s in summaries] == ['programs', 'actions']
    assert all(s['outcome']['success'] for s in summaries), summaries
    events = [json.loads(line) for line in (replay / 'events.jsonl').read_text().splitlines()]
    (start,) = of_type(events, 'episode')
    assert start['interface'] == 'actions' and start['actions_from'] == f'../{source.name}'
    replies = [r['reply'] for r in of_type(events, 'model_request')]
    assert len(replies) >= 4 and all('<action>{"arm": "left"' in r for r in replies)
    assert summaries[1]['decisions'] == decisions(start=1, action=len(replies) - 1)


def test_an_outage_is_survived_with_backoff(tmp_path, monkeypatch, capfd):
    replies = [overloaded(), Scripted(status=500), Scripted(status=429), PICK, FINISH]
    with MessagesServer(replies) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'finished', summary
    assert summary['model_calls'] == 2 and len(server.requests) == 5
    out = capfd.readouterr().out
    assert out.count('the model service gave') == 3 and 'attempt 2 in 1.0 s' in out
    said = [e['said'] for e in of_type(events, 'model_service')]  # the run folder has them too
    assert len(said) == 3 and said[0].startswith('the model service gave 529 overloaded_error')


def test_an_outage_longer_than_the_budget_is_model_service_failed(tmp_path, monkeypatch):
    with MessagesServer([overloaded(retry_after=40)]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server, '--max-wall-seconds', '5')
    assert code == 1 and summary['status'] == 'model_service_failed', summary
    assert 'the model service failed: 529' in summary['detail']
    assert summary['wall_seconds'] < 30  # the 40 s retry-after was not obeyed past the budget
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    'bad,said',
    [
        (Scripted(blocks=[]), 'the reply is empty'),
        (
            Scripted(blocks=[{'type': 'tool_use', 'id': 't1', 'name': 'pick', 'input': {}}]),
            'only tool_use block',
        ),
        (
            Scripted('<python>\nx = 1\n' + 'y = 2\n' * 50, stop_reason='max_tokens'),
            'cut off at max_tokens (4096 tokens) after',
        ),
        # a service whose reply no max_tokens limited (2.4 MB had run, and been resent)
        (
            Scripted('<python>\n' + 'y = 2\n' * 400000 + '</python>', 1000, 100),
            'the reply holds 2400018 characters, more than a reply of max_tokens (4096 tokens)',
        ),
    ],
)
def test_empty_and_cut_off_replies_are_format_errors(tmp_path, monkeypatch, bad, said):
    with MessagesServer([bad, PICK, FINISH]) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'finished', summary
    assert summary['decisions'] == decisions(start=1, format=1, program_end=1)
    second = server.requests[1]
    assert said in text_of(second)
    # No assistant message is empty: the real service refuses a request that holds one.
    assert all(m['content'] for m in second['messages'] if m['role'] == 'assistant')
    assert len(json.dumps(second['messages'])) < 200_000  # what was said of it, clipped
    # the run folder keeps no more of a reply than max_tokens allows (events, report, bag)
    kept = [e['reply'] for e in of_type(events, 'model_request') if 'reply' in e]
    assert len(kept) == 3 and max(map(len, kept)) < 4096 * 16 + 50, [len(r) for r in kept]


@pytest.mark.parametrize(
    'bad',
    [
        Scripted(raw=b'{"id": "x", "content": [oops'),
        # JSON's \\ud800 escape: text that no request could resend, nor the kernel run
        Scripted("<python>\nprint('\ud800')\n</python>"),
    ],
    ids=['cut JSON', 'a lone surrogate'],
)
def test_a_malformed_answer_mid_run_is_retried(tmp_path, monkeypatch, bad):
    with MessagesServer([PICK, bad, FINISH]) as server:
        code, summary, _, _ = episode(tmp_path, monkeypatch, server)
    assert code == 0 and summary['status'] == 'finished', summary
    assert len(server.requests) == 3 and summary['decisions'] == decisions(start=1, program_end=1)


def test_verifier_calls_count_against_the_budget(tmp_path, monkeypatch):
    program = (
        "<python>\nfor _ in range(5):\n    print(verify('the cube is red').sentence)\n</python>"
    )
    with MessagesServer([program, FINISH], ['YES. It is red.']) as server:
        code, summary, events, _ = episode(tmp_path, monkeypatch, server, '--max-model-calls', '4')
    assert summary['verifier_calls'] == 3 and len(server.verifier_requests) == 3
    (cell,) = of_type(events, 'cell')
    assert cell['output'].count('the episode has no model calls left') == 2
    assert summary['status'] == 'budget_exhausted' and summary['model_calls'] == 1


def test_the_cost_cap_refuses_a_call_that_could_pass_it(tmp_path, monkeypatch):
    # Each call could cost up to 4096 output tokens at $10 per million: $0.04 and more.
    with MessagesServer([Scripted("<python>\nprint('x')\n</python>", 1000, 10)]) as server:
        code, summary, _, _ = episode(tmp_path, monkeypatch, server, '--max-cost-usd', '0.05')
    assert code == 0 and summary['status'] == 'cost_exhausted', summary
    assert summary['cost_usd'] <= 0.05 and 'could cost up to' in summary['detail']


def test_an_unreachable_model_server_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    monkeypatch.setenv('ANTHROPIC_BASE_URL', f'http://127.0.0.1:{port}')
    code = main(['--config', CONFIG, 'run', 'lift_cube', '--model', MODEL, '--out', str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f'cannot reach the model server at http://127.0.0.1:{port}' in err
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / 'summary.json').read_text())
    # not run (the bench counts it so), and nothing used: no call, no cost, no bag
    assert summary['status'] == 'model_service_failed' and 'cannot reach' in summary['detail']
    assert summary['model_calls'] == 0 and summary['cost_usd'] == 0.0 and summary['bag'] is None
    assert 'cannot reach' in (folder / 'report.html').read_text()  # the folder says why
