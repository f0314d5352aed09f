"""The warm station: one graph serving episode after episode. Each episode writes its complete
run folder; its program runs in a fresh program process (started ahead, another uid than the
last one's) that sees nothing of the episodes before; an episode gives the same trajectory
first or after others; a station that dies is replaced and its episode runs again."""

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from harness_bringup.bench import BenchEpisode, EpisodeJob
from harness_bringup.processes import use_wheels_ament_prefix
from harness_bringup.run import GraphOptions, prepare, run_episode
from harness_bringup.station_runner import StationRunner
from harness_bringup.supervisor import Interrupts
from harness_bringup.warm_station import WarmGraph, station_key
from harness_driver.models import ScriptedModel
from harness_types.config import load_config, with_overrides

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / 'config' / 'harness.yaml'

# Episode A's program leaves a file and a variable, tries the station's folder of perception
# passes (what the verifier's eyes take from the kernel), looks for any other process it could
# signal (the kernel, the station, the recorder), then kills every process it may (kill(-1)):
# itself, and nothing else; the next episode's program process starts after it is gone.
ATTACK = """import os, signal
open('secret.txt', 'w').write('episode A')
SECRET = 'A'
reached = []
for reach in (
    lambda: os.listdir(PASSES),
    lambda: open(PASSES + '/x.json', 'w').write('{}'),
    lambda: open(ENTRY).read(),
):
    try:
        reach()
        reached.append('reached')
    except OSError as e:
        reached.append(type(e).__name__)
me = os.getpid()
alive = []
for pid in range(max(2, me - 3000), me + 3000):
    if pid != me:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except OSError:
            pass
open('attack.txt', 'w').write(repr((os.getuid(), me, alive, reached)))
os.kill(-1, signal.SIGKILL)
"""
# Episode B's program looks for what episode A left.
CHECK = """import os
seen = sorted(os.listdir('.'))
try:
    SECRET
    leaked = True
except NameError:
    leaked = False
open('check.txt', 'w').write(repr((seen, leaked, os.getuid(), os.getpid())))
moved = move_joints([0.2, 0.3, 0.3, 0, 0, 0], arm='left')
print('moved', moved.event)
"""


def _config():
    return with_overrides(load_config(CONFIG), 'driver', model='scripted')


def _prepared(config, task: str, cells: list[str] | None = None):
    p = prepare(config, task, 0, 0, log=lambda _m: None)
    if cells is not None:
        p.model = ScriptedModel(cells, retries_per_cell=0)
    return p


def _complete(run: Path) -> dict:
    """The run folder's summary, after checking the folder is whole."""
    summary = json.loads((run / 'summary.json').read_text())
    events = [json.loads(x) for x in (run / 'events.jsonl').read_text().splitlines()]
    assert events[-1]['type'] == 'end'
    assert (run / 'kernel.log').is_file() and (run / 'kernel.out').is_file()
    assert (run / 'bag' / 'metadata.yaml').is_file(), summary.get('bag_error')
    report = (run / 'recorder.out').read_text().splitlines()[-1]
    assert report.startswith('recorded ') and json.loads(report[9:])['ended']
    # every event of the episode is in its bag, its first included
    assert json.loads(report[9:])['counts']['/harness/events'] == len(events)
    assert summary.get('bag') == 'bag' and not summary.get('bag_error'), summary
    assert not (run / '.program_workspace').exists()
    return summary


def test_episodes_on_one_station_see_nothing_of_each_other(tmp_path):
    use_wheels_ament_prefix()
    # the station's file lists no camera: ROS gives an empty list no value, only its type
    config = with_overrides(_config(), 'driver', cameras=[])
    params = config.write(tmp_path / 'params.yaml')
    runs = {name: tmp_path / name for name in ('first', 'attack', 'check', 'again')}
    with WarmGraph(params, tmp_path, record=True) as graph:
        attack = [f'PASSES = {str(graph.passes)!r}\nENTRY = None\n{ATTACK}']
        for name, task, cells in (
            ('first', 'lift_cube', None),
            ('attack', 'lift_cube', attack),
            ('check', 'lift_cube', [CHECK]),
            ('again', 'lift_cube', None),
        ):
            # 'check' runs with a driver section of its own: the driver node's parameters show
            # each episode's (ros2 param get /driver ...), not the station's first one's
            section = {'max_model_calls': 29, 'cameras': ['cam_head']} if name == 'check' else {}
            episode_config = with_overrides(config, 'driver', **section)
            if name == 'check':  # an emergency stop left engaged is released for the next one
                graph.skills.estop(True)
            if name == 'attack':  # a pass the first episode's perceptions wrote, by its name
                entry = sorted(graph.passes.glob('*.json'))[0]
                attack[0] = attack[0].replace('ENTRY = None', f'ENTRY = {str(entry)!r}')
            run_episode(
                _prepared(episode_config, task, cells),
                runs[name],
                lambda _m: None,
                GraphOptions(),
                graph,
            )
            shown = {k: graph.driver.get_parameter(k).value for k in ('max_model_calls', 'cameras')}
            assert shown == {
                'max_model_calls': episode_config.driver.max_model_calls,
                'cameras': list(episode_config.driver.cameras),
            }, name
        assert graph.health() == ''
    summaries = {name: _complete(run) for name, run in runs.items()}
    uid_a, pid_a, alive, reached = eval((runs['attack'] / 'workspace' / 'attack.txt').read_text())
    assert alive == []  # no other process could be signalled
    # nor the station's passes folder listed or written, nor a pass in it read
    assert reached == ['PermissionError'] * 3, reached
    assert (runs['attack'] / 'workspace' / 'secret.txt').read_text() == 'episode A'
    seen, leaked, uid_b, pid_b = eval((runs['check'] / 'workspace' / 'check.txt').read_text())
    assert seen == [] and not leaked and pid_b != pid_a
    if os.geteuid() == 0:  # the sandbox changes the uid only as root
        assert uid_b != uid_a
    # B's program process survived A's kill(-1): its cell ran to the end
    cells = [
        json.loads(x)
        for x in (runs['check'] / 'events.jsonl').read_text().splitlines()
        if json.loads(x)['type'] == 'cell'
    ]
    assert cells and cells[0]['status'] == 'ok', cells
    assert 'moved COMPLETED' in (runs['check'] / 'events.jsonl').read_text()
    # the same episode, first and fourth: the same trajectory and result
    # the kernel's first locate() took the pass the verifier ran on the same views at the start
    log = [json.loads(x) for x in (runs['first'] / 'kernel.log').read_text().splitlines()]
    (passes,) = [e['perception_passes'] for e in log if 'perception_passes' in e]
    assert passes.get('shared', 0) >= 1, passes
    first, again = summaries['first'], summaries['again']
    for key in ('status', 'outcome', 'env_steps', 'goal_verdicts', 'decisions'):
        assert first[key] == again[key], key
    (a,) = sorted((runs['first'] / 'ticks').glob('*.npz'))
    (b,) = sorted((runs['again'] / 'ticks').glob('*.npz'))
    with np.load(a) as x, np.load(b) as y:
        assert set(x.files) == set(y.files)
        for f in x.files:
            assert np.array_equal(x[f], y[f]), f


def test_a_station_serves_one_set_of_node_parameters():
    config = _config()
    assert station_key(config) == station_key(with_overrides(config, 'driver', model='x'))
    other = with_overrides(config, 'kernel', perception='oracle')
    assert station_key(config) != station_key(other)


def _act_on_the_first_station(runner, folder: Path, marker: str, act):
    """A thread (started) that calls `act` on the runner's first station once a run folder
    under `folder` has `marker` (its episode has begun there), and the event it sets first."""
    acted = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if list(folder.glob(f'*/{marker}')) and runner._stations:
                acted.set()
                act(runner._stations[0])
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, acted


def _episode_whose_station_is_acted_on(tmp_path, act) -> tuple[dict, list[Path]]:
    """lift_cube on warm stations, `act` called on its first station once the episode began:
    (the episode's summary, its run folders in order)."""
    runner = StationRunner(tmp_path / 'stations')
    folder = tmp_path / 'episodes' / 'lift_cube'
    job = EpisodeJob(BenchEpisode('lift_cube', 0, 0), 'scripted', str(CONFIG))
    actor, acted = _act_on_the_first_station(runner, folder, 'events.jsonl', act)
    try:
        summary = runner(job, folder, Interrupts())
    finally:
        runner.close()
    actor.join(timeout=5)
    assert acted.is_set()
    return summary, sorted(p for p in folder.iterdir() if p.is_dir())


def test_a_station_that_dies_is_replaced_and_its_episode_runs_again(tmp_path):
    summary, runs = _episode_whose_station_is_acted_on(tmp_path, lambda st: st.signal(9))
    assert len(runs) == 2, runs
    failed = json.loads((runs[0] / 'summary.json').read_text())
    assert failed['status'] == 'station_failed'  # not run: it ran again
    assert 'station process ended' in failed['station_failed']
    assert failed['written_by'] == 'supervisor'
    assert summary['run_folder'] == str(runs[1]) or Path(summary['run_folder']) == runs[1]
    assert summary['outcome']['success'], summary
    assert summary['retry_of'] == os.path.relpath(runs[0], runs[1])
    command = summary['command_seconds']
    assert command['station'] == 'station-2' and command['station_episode'] == 1
    # The new station's start is the episode's station_start (its process start and imports,
    # until it read the request), not part of what its answer took beyond its phases (exit).
    parts = ('station_start', 'episode_process', 'after_episode_process')
    assert abs(sum(command[p] for p in parts) - command['total']) < 0.05, command
    assert command['station_start'] > command['episode_process_exit'], command
    assert summary['episode_process_seconds']['station_graph_start'] > 0


def test_a_station_terminated_alone_is_a_station_failure_and_its_episode_runs_again(tmp_path):
    """A SIGTERM to the station (not the bench's Ctrl-C): nobody interrupted the episode; its
    station failed under it, and it runs again on a new one."""
    summary, runs = _episode_whose_station_is_acted_on(tmp_path, lambda st: st.process.terminate())
    assert len(runs) == 2, runs
    failed = json.loads((runs[0] / 'summary.json').read_text())
    assert failed['status'] == 'station_failed', failed
    assert 'a signal the bench did not send' in failed['station_failed']
    assert summary['outcome']['success'] and summary['retry_of'], summary


def test_an_episode_interrupted_while_its_station_starts_is_closed_as_configured(tmp_path):
    """A Ctrl-C while the station's graph starts: the run folder has the episode's
    params.yaml (written before the graph starts), so it is closed as its recording level
    says (lean: no report), and no process of the station is left."""
    from process_tree import descendants

    runner = StationRunner(tmp_path / 'stations')
    folder = tmp_path / 'episodes' / 'lift_cube'
    extra = ('--recording', 'lean')
    job = EpisodeJob(BenchEpisode('lift_cube', 0, 0), 'scripted', str(CONFIG), extra)
    interrupts = Interrupts()
    waiter, acted = _act_on_the_first_station(
        runner, folder, 'params.yaml', lambda _station: interrupts.add()
    )
    # As a bench a script started in the background: SIGINT ignored, and inherited so
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        summary = runner(job, folder, interrupts)
    finally:
        signal.signal(signal.SIGINT, ignored)
        runner.close()
    waiter.join(timeout=5)
    assert acted.is_set()
    (run,) = [p for p in folder.iterdir() if p.is_dir()]
    assert summary['status'] == 'interrupted' and summary.get('written_by') == 'supervisor'
    assert load_config(run / 'params.yaml').driver.recording == 'lean'
    assert not (run / 'report.html').exists()
    assert not [c for c in descendants(os.getpid()).values() if 'harness' in c]


def test_a_hung_station_is_killed_at_its_deadline_and_its_episode_runs_again(tmp_path):
    """A station stopped (SIGSTOP) as its episode begins enforces none of the episode's
    budgets: its runner kills it once the episode's max_wall_seconds and the overrun allowance
    have passed, closes the run folder and runs the episode again on a new station."""
    from harness_bringup.episode_deadline import EpisodeDeadline
    from process_tree import descendants

    # bounds of the test's own (max_wall_seconds 1 s, nothing past it: the run's timeouts would
    # allow minutes), then 15 s for the rest (the retry's episode ends well within them)
    bounds = lambda params, _task: (1.0, 0.0) if params.is_file() else None  # noqa: E731
    deadline = EpisodeDeadline(start_s=300, overrun_s=15, bounds=bounds)
    runner = StationRunner(tmp_path / 'stations', deadline)
    folder = tmp_path / 'episodes' / 'lift_cube'
    extra = ('--max-wall-seconds', '1')
    job = EpisodeJob(BenchEpisode('lift_cube', 0, 0), 'scripted', str(CONFIG), extra)

    def stop(station) -> None:
        station.signal(signal.SIGSTOP)
        # (not killed in 120 s: resumed, so that the test fails rather than hangs)
        with contextlib.suppress(subprocess.TimeoutExpired):
            station.process.wait(timeout=120)
        station.signal(signal.SIGCONT)

    stopper, stopped = _act_on_the_first_station(runner, folder, 'params.yaml', stop)
    try:
        summary = runner(job, folder, Interrupts())
    finally:
        runner.close()
    stopper.join(timeout=5)
    assert stopped.is_set()
    runs = sorted(p for p in folder.iterdir() if p.is_dir())
    assert len(runs) == 2, runs
    hung = json.loads((runs[0] / 'summary.json').read_text())
    assert hung['status'] == 'station_failed' and hung['written_by'] == 'supervisor'
    assert 'the supervisor took it for hung and killed it' in hung['station_failed']
    assert 'max_wall_seconds (1 s), 0 s its driver may run past them' in hung['detail'], hung
    events = (runs[0] / 'events.jsonl').read_text().splitlines()
    assert json.loads(events[-1])['type'] == 'end'
    # the new station's episode ended by itself (its driver kept its budget)
    assert summary['retry_of'] == os.path.relpath(runs[0], runs[1])
    # what the first run's calls used (none: it was stopped before its first), from its summary
    assert summary['retry_of_usage'] == {
        'model_calls': 0,
        'verifier_calls': 0,
        'tokens': {'input': 0, 'output': 0},
        'cost_usd': 0.0,
    }
    assert summary['status'] not in ('station_failed', 'error') and 'written_by' not in summary
    assert not [c for c in descendants(os.getpid()).values() if 'harness' in c]


@pytest.mark.parametrize(
    ('bad', 'said'),
    [
        (['run', 'no_such_task'], 'unknown task'),
        (['bench'], 'runs `harness run` episodes'),
        (['run', '--layout', 'x'], 'a layout is a number'),
    ],
)
def test_a_station_answers_a_request_it_cannot_run(tmp_path, capsys, bad, said):
    """A request that is not a runnable episode is answered with harness run's exit code for
    it, and the station serves on."""
    import io

    from harness_bringup.warm_station import serve

    request = json.dumps({'argv': bad, 'folder': str(tmp_path / 'run')}) + '\n'
    answers = io.StringIO()
    saved = os.dup(1), os.dup(2)
    try:
        assert serve(tmp_path, io.StringIO(request * 2), answers) == 0
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
    replies = [json.loads(x) for x in answers.getvalue().splitlines()]
    assert all(isinstance(r.pop('read_at'), float) for r in replies)  # when it read the request
    assert replies == [{'code': 2, 'healthy': '', 'finish': []}] * 2
    # (said on the episode's output: the station's log here, pytest's capture of it in a test)
    captured = capsys.readouterr()
    assert said in (tmp_path / 'station.log').read_text() + captured.out + captured.err


def test_a_lean_recording_keeps_what_the_tables_and_training_need(tmp_path):
    """driver.recording lean: no report.html or per-run dataset, a bag without the cameras,
    /tf or the model's images; the report and the dataset can be made from what is kept."""
    from harness_recording.lerobot import write_run_dataset
    from harness_recording.run_report import write_report
    from rosbags.rosbag2 import Reader

    use_wheels_ament_prefix()
    config = with_overrides(_config(), 'driver', recording='lean')
    params = config.write(tmp_path / 'params.yaml')
    run = tmp_path / 'lean'
    with WarmGraph(params, tmp_path, record=True, lean=True) as graph:
        run_episode(_prepared(config, 'lift_cube'), run, lambda _m: None, GraphOptions(), graph)
    summary = _complete(run)
    assert summary['recording'] == 'lean' and summary['outcome']['success']
    assert not (run / 'report.html').exists() and not (run / 'lerobot').exists()
    assert list((run / 'images').iterdir()) and list((run / 'ticks').iterdir())
    with Reader(run / 'bag') as reader:
        topics = {c.topic for c in reader.connections}
    assert '/joint_states' in topics and '/harness/events' in topics
    assert not {'/tf', '/harness/model_images'} & topics
    assert not [t for t in topics if '/cameras/' in t]
    assert write_run_dataset(run) is not None and write_report(run).is_file()


def test_a_bag_short_of_a_published_state_is_said_incomplete(tmp_path, monkeypatch):
    """Each episode's summary checks its bag against the states the worker published while it
    was open: a state lost on its way to the recorder (here the first episode's reset, never
    sent) is said; the next episode's bag, on the same station, is complete."""
    from harness_worker.worker_node import WorkerNode

    use_wheels_ament_prefix()
    publish = WorkerNode._publish_state
    lose = [True]

    def losing_one(self, state=None):
        if lose.pop() if lose else False:  # counted as published, never sent
            for topic in self.state_messages_published:
                self.state_messages_published[topic] += 1
            return
        publish(self, state)

    monkeypatch.setattr(WorkerNode, '_publish_state', losing_one)
    config = _config()
    params = config.write(tmp_path / 'params.yaml')
    summaries = []
    with WarmGraph(params, tmp_path, record=True) as graph:
        for name in ('lossy', 'whole'):
            run = tmp_path / name
            p = _prepared(config, 'lift_cube')
            run_episode(p, run, lambda _m: None, GraphOptions(), graph)
            summaries.append(json.loads((run / 'summary.json').read_text()))
    lossy, whole = summaries
    n = lossy['env_steps']
    assert lossy['bag_incomplete'] is True and 'bag' not in lossy, lossy
    assert lossy['bag_error'] == (
        'it recorded fewer states than the worker published '
        f'({n} of {n + 1} on /joint_states, {n} of {n + 1} on /tf, {n} of {n + 1} on /clock): '
        'the bag is incomplete'
    )
    assert whole['bag'] == 'bag' and 'bag_error' not in whole, whole


def test_the_episode_after_a_killed_recorder_has_a_whole_bag(tmp_path):
    """The recorder is killed mid-episode: that bag is said incomplete, the recorder replaced,
    and the next episode waits for the new one (the killed one stays listed, and matched,
    until its lease runs out), so its bag holds its first state."""
    use_wheels_ament_prefix()
    config = _config()
    params = config.write(tmp_path / 'params.yaml')
    summaries = []
    with WarmGraph(params, tmp_path, record=True) as graph:
        killed = []

        def kill_the_recorder(line: str) -> None:
            if 'running the program' in line and not killed:
                killed.append(graph.recorder.pid)
                os.kill(graph.recorder.pid, signal.SIGKILL)

        for name, log in (('killed', kill_the_recorder), ('next', lambda _m: None)):
            run = tmp_path / name
            run_episode(_prepared(config, 'lift_cube'), run, log, GraphOptions(), graph)
            summaries.append(json.loads((run / 'summary.json').read_text()))
    first, second = summaries
    assert killed and first['bag_incomplete'] is True, first
    assert second['bag'] == 'bag' and 'bag_error' not in second, second


def test_an_execution_left_running_ends_before_the_next_episode(tmp_path):
    """An execution the last episode left running (a cell the kernel no longer waits for) ends
    under the emergency stop before the next episode begins, and the stop is released: the
    next episode's motion runs. At an episode's end (stop_kernel) one ends before the kernel
    is asked to end the episode, which it then does: the station serves on."""
    from harness_types.wait import wait_future
    from rclpy.action import ActionClient

    from harness_msgs.action import MoveJoints
    from harness_types import names

    use_wheels_ament_prefix()
    config = _config()
    params = config.write(tmp_path / 'params.yaml')
    with WarmGraph(params, tmp_path, record=False) as graph:
        graph.begin_episode(None, config.driver)
        graph.reset('lift_cube')
        client = ActionClient(graph.client, MoveJoints, names.skill_action('move_joints'))
        assert client.wait_for_server(timeout_sec=30)

        def move(speed: float):
            goal = MoveJoints.Goal(arm='left', positions=[0.8, 1.2, 1.2, 0.0, 0.0, 0.0])
            goal.speed = speed
            return wait_future(client.send_goal_async(goal), 30.0)

        left_behind = move(0.02)  # ~60 s of simulated motion
        deadline = time.monotonic() + 30
        while graph.skills.executing.count == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert graph.skills.executing.count == 1
        graph.begin_episode(None, config.driver)
        assert graph.skills.executing.count == 0
        ended = wait_future(left_behind.get_result_async(), 30.0).result.execution
        assert 'emergency stop' in ended.event.detail, ended.event
        graph.reset('lift_cube')
        after = wait_future(move(0.0).get_result_async(), 60.0).result.execution
        assert after.event.name == 'COMPLETED', after.event
        # an episode with its kernel: a motion still running when it ends
        run = tmp_path / 'run'
        run.mkdir()
        graph.begin_episode(None, config.driver)
        graph.start_kernel(run, run / 'kernel.log')
        graph.reset('lift_cube')
        left_behind = move(0.02)
        while graph.skills.executing.count == 0 and time.monotonic() < deadline + 60:
            time.sleep(0.001)
        graph.stop_kernel()
        ended = wait_future(left_behind.get_result_async(), 30.0).result.execution
        assert 'emergency stop' in ended.event.detail, ended.event
        assert graph.health() == '' and 'kernel_error' not in graph.notes
        graph.begin_episode(None, config.driver)
        graph.reset('lift_cube')
        after = wait_future(move(0.0).get_result_async(), 60.0).result.execution
        assert after.event.name == 'COMPLETED', after.event


def test_a_kernel_that_refused_to_go_on_retires_its_station():
    """A kernel that ended its episode with a cell still running (refusal) makes the station's
    health say so: the station serves no other episode and is replaced."""
    from types import SimpleNamespace

    alive = SimpleNamespace(death=lambda: '')
    graph = SimpleNamespace(kernel=alive, refusal='', record=False)
    assert WarmGraph.health(graph) == ''
    graph.refusal = 'the kernel ended its episode badly: 1 cell(s) still run'
    assert WarmGraph.health(graph) == graph.refusal
