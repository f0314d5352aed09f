"""The bench: tables from summaries (unit), and `harness bench` run twice gives the same
results table (deterministic simulation; wall times are kept apart)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness_bringup.bench import EXPERT_TRIES, BenchEpisode, expert_check, run_episodes
from harness_bringup.cli import main
from harness_recording.bench_table import bench_tables, markdown
from process_tree import descendants, processes, program_processes

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]


def summary(task, layout, success, calls=2, cost=0.01, wall=3.0, decisions=None):
    return {
        'task': task,
        'layout': layout,
        'seed': 0,
        'model': 'claude-sonnet-5-5',
        'baseline': False,
        'status': 'finished',
        'model_calls': calls,
        'decisions': decisions or {'start': 1, 'program_end': calls - 1},
        'tokens': {'input': 1000, 'output': 100},
        'cost_usd': cost,
        'env_steps': 200 + layout,
        'outcome': {'success': success, 'score': 1.0 if success else 0.25, 'detail': 'why'},
        'wall_seconds': wall,
    }


def test_tables_per_task_and_overall():
    tables = bench_tables(
        [
            summary('a', 0, True),
            summary('a', 1, False, calls=4, decisions={'start': 1, 'escalation': 3}),
            summary('b', 0, True, cost=None, wall=9.0),
        ]
    )
    a, overall = tables['tasks']['a'], tables['overall']
    assert a['episodes'] == 2 and a['success_rate'] == 0.5 and a['score'] == 0.625
    assert a['model_calls'] == 3.0 and a['decisions'] == {
        'start': 2,
        'program_end': 1,
        'escalation': 3,
    }
    assert a['input_tokens'] == 2000 and a['cost_usd'] == 0.02
    assert overall['episodes'] == 3 and overall['cost_usd'] is None  # b's model has no price
    assert tables['timing']['tasks']['b']['wall_seconds_mean'] == 9.0
    text = markdown(tables)
    assert '| a | 2 | 0 | 0.5 | 0.625 | 3.0 | start 2, escalation 3, program_end 1 |' in text
    assert '| **overall** | 3 |' in text and '## Timing' in text
    assert tables['strategies'] == {} and 'By strategy' not in text
    assert 'Run again on a fresh station' not in text and 'Bags incomplete' not in text


def test_the_tables_name_episodes_run_again_and_bags_incomplete():
    again = summary('a', 0, True) | {'run_folder': '/b/episodes/a/run-2', 'retry_of': '../run-1'}
    cut = summary('b', 1, True) | {'bag_incomplete': True}
    tables = bench_tables([again, cut, summary('c', 0, True)])
    assert tables['timing']['run_again_after_a_station_failed'] == ['run-2']
    assert tables['timing']['bags_incomplete'] == ['b-l1-s0']
    text = markdown(tables)
    assert 'Run again on a fresh station after theirs failed: 1 (run-2).' in text
    assert "Bags incomplete (the summary's bag_error says why): 1 (b-l1-s0)." in text


def test_the_calls_of_runs_the_results_leave_out_are_in_the_timing():
    """With a paid model, a run whose station failed cost its calls, and so did one that was not
    run after it had asked: the results leave them out, the bill does not."""
    first = {'model_calls': 3, 'verifier_calls': 1, 'tokens': {'input': 900, 'output': 90}}
    again = summary('a', 0, True) | {'retry_of': '../run-1', 'retry_of_usage': first}
    again['retry_of_usage']['cost_usd'] = 0.004
    failed = summary('b', 0, False, calls=2, cost=0.002) | {'status': 'model_service_failed'}
    never = {'task': 'c', 'layout': 0, 'seed': 0, 'status': 'not_started', 'detail': 'x'}
    tables = bench_tables([again, failed, never, summary('c', 1, True)])
    spent = tables['timing']['calls_of_runs_not_counted']
    assert spent == {
        'runs': 2,
        'model_calls': 5,
        'verifier_calls': 1,
        'input_tokens': 1900,
        'output_tokens': 190,
        'cost_usd': 0.006,
    }
    assert tables['overall']['cost_usd'] == 0.02  # the results: the two episodes that counted
    said = '2 runs, 5 model calls, 1 verifier calls, 1900 input and 190 output tokens, 0.006 USD'
    assert said in markdown(tables)
    assert bench_tables([summary('a', 0, True)])['timing']['calls_of_runs_not_counted'] == {}


def test_episodes_with_policies_are_tabled_per_strategy():
    def with_policies(task, layout, choice, calls):
        s = summary(task, layout, True, calls=calls)
        s['strategy'] = {'policies': True, 'choice': choice, 'kind': 'lift'}
        return s

    tables = bench_tables(
        [
            with_policies('a', 0, 'A', 2),
            with_policies('a', 1, 'A', 3),
            with_policies('b', 0, 'B', 6),
        ]
    )
    assert tables['strategies']['A']['episodes'] == 2
    assert tables['strategies']['A']['model_calls'] == 2.5
    assert tables['strategies']['B']['model_calls'] == 6.0
    assert [e['strategy'] for e in tables['episodes']] == ['A', 'A', 'B']
    text = markdown(tables)
    assert '## By strategy' in text and '| A | 2 | 0 | 1.0 | 1.0 | 2.5 |' in text


def test_the_division_of_labour_table_puts_each_way_side_by_side():
    def way(forced, success, calls, steps=300):
        s = summary('lift_cube', 0, success, calls=calls)
        s['strategy'] = {'policies': True, 'forced': forced, 'choice': forced or 'A'}
        s['env_steps'] = steps
        return s

    not_run = {'task': 'lift_cube', 'layout': 1, 'seed': 1, 'status': 'not_started'}
    tables = bench_tables(
        [
            way('A', True, 2),
            way('A', False, 2),
            way('B', True, 3, 200),
            way(None, True, 2),
            not_run | {'forced_strategy': 'A'},
        ]
    )
    division = tables['division']
    assert list(division) == ['policy alone (A)', 'programs alone (B)', "agent's choice"]
    alone = division['policy alone (A)']['lift_cube']
    assert (alone['episodes'], alone['not_run'], alone['success_rate']) == (2, 1, 0.5)
    assert division['programs alone (B)']['overall']['env_steps'] == 200.0
    text = markdown(tables)
    assert '## Division of labour' in text
    assert '| lift_cube | policy alone (A) | 2 | 1 | 0.5 |' in text
    # no strategy forced: no division table
    assert bench_tables([way(None, True, 2)])['division'] == {}


def test_the_ladder_table_puts_the_same_episodes_side_by_side_per_rung():
    def on(rung, success, calls, characters):
        s = summary('a', 0, success, calls=calls)
        s['interface'], s['request_characters'] = rung, characters
        return s

    tables = bench_tables(
        [on('programs', True, 2, 30000), on('skills', True, 6, 90000), on('skills', False, 9, 1)]
    )
    assert tables['ladder']['programs']['model_calls'] == 2.0
    skills = tables['ladder']['skills']
    assert skills['success_rate'] == 0.5 and skills['request_characters'] == 90001
    text = markdown(tables)
    assert '## Interface ladder' in text and '| skills | 2 | 0.5 | 7.5 | 2000 | 90001 |' in text
    assert '| a | skills | 0 | 0 |' in text  # the episodes table names each one's rung
    assert bench_tables([summary('a', 0, True)])['ladder'] == {}  # one rung: no ladder table


def bench_once(tmp_path, name, station='warm'):
    out = tmp_path / name
    code = main(
        [
            '--config',
            str(ROOT / 'config' / 'harness.yaml'),
            'bench',
            '--station',
            station,
            '--tasks',
            'lift_cube',
            'press_button',
            '--layouts',
            '1',
            '--randomize',
            'all',
            '--jobs',
            '1' if station == 'warm' else '2',
            '--out',
            str(out),
        ]
    )
    assert code == 0
    (folder,) = out.iterdir()
    assert (folder / 'bench.md').is_file()
    # the shipped outcome model scored both episodes; the report card has its card
    card = json.loads((folder / 'report_card.json').read_text())['outcome_model']
    assert sum(card['card']['all'].values()) == 2 and card['left_out_trained_layouts'] == 0
    assert 'Outcome model (shadow mode)' in (folder / 'report_card.md').read_text()
    # Each episode's report and dataset, made by the episode (cold) or by the bench once the
    # station has served it (warm: its finisher, whose log line had failed every time)
    episodes = sorted(p.parent for p in folder.glob('episodes/*/*/summary.json'))
    assert len(episodes) == 2
    for run in episodes:
        assert (run / 'report.html').is_file() and (run / 'lerobot').is_dir(), run
        finished = json.loads((run / 'summary.json').read_text()).get('finished_by_bench_seconds')
        assert (finished is not None) == (station == 'warm'), finished
        assert 'not finished' not in (run.parent / 'harness.log').read_text()
    return json.loads((folder / 'bench.json').read_text())


def test_the_same_bench_twice_gives_the_same_table(tmp_path, capsys):
    """With every randomisation axis on: the same seeds give the same scenes and tables, on one
    warm station serving both episodes and with a graph started for each episode."""
    first, second = bench_once(tmp_path, 'first'), bench_once(tmp_path, 'second', 'cold')
    out = capsys.readouterr().out
    assert '2/2' in out and '| lift_cube | 1 | 0 | 1.0 | 1.0 |' in out
    for tables in (first, second):
        assert tables['overall']['success_rate'] == 1.0, tables['episodes']
        assert tables['baseline'] and tables['model'] == 'scripted'
    results = [{k: v for k, v in t.items() if k != 'timing'} for t in (first, second)]
    assert results[0] == results[1]
    assert [e['task'] for e in first['episodes']] == ['lift_cube', 'press_button']
    assert {e['randomize'] for e in first['episodes']} == {'all'}
    assert list(first['axes']) == ['all'] and first['axes']['all']['episodes'] == 2


def test_tables_by_category_and_by_randomisation_axis():
    rows = [summary('lift_cube', 0, True), summary('insert_peg', 0, False)]
    rows += [{**summary('insert_peg', 1, True), 'randomize': 'lighting'}]
    tables = bench_tables(rows)
    assert list(tables['categories']) == ['generalization', 'precision']
    assert tables['categories']['precision']['episodes'] == 2
    assert tables['categories']['precision']['success_rate'] == 0.5
    assert list(tables['axes']) == ['none', 'lighting']  # in the order of the axes
    assert tables['axes']['lighting']['success_rate'] == 1.0
    text = markdown(tables)
    assert '## By category' in text and '| generalization | 1 | 0 | 1.0 |' in text
    assert '## By randomisation axis' in text and '| lighting | 1 | 0 | 1.0 |' in text


def test_the_expert_check_keeps_the_layouts_the_reference_solves(tmp_path):
    """Seeds the reference fails are dropped with their reason and further seeds are tried,
    at most EXPERT_TRIES per layout to keep."""
    ran = []

    def reference(job, folder, interrupts):
        e = job.episode
        ran.append((e.task, e.seed, e.randomize, job.model))
        solved = not (e.task == 'b' and e.seed in (11, 12)) and e.task != 'never'
        return {
            'task': e.task, 'layout': e.layout, 'seed': e.seed, 'status': 'finished',
            'outcome': {'success': solved, 'detail': 'ok' if solved else 'the cube fell'},
        }  # fmt: skip

    check = expert_check(
        ['a', 'b', 'never'], 2, 10, ('lighting',), tmp_path, None, 2, lambda m: None,
        runner=reference,
    )  # fmt: skip
    assert check.kept == {'a': [10, 11], 'b': [10, 13], 'never': []}
    assert [d['seed'] for d in check.dropped['b']] == [11, 12]
    assert check.dropped['b'][0]['why'] == 'finished: the cube fell'
    assert len(check.dropped['never']) == 2 * EXPERT_TRIES  # it gave up
    assert {r[2] for r in ran} == {('lighting',)} and {r[3] for r in ran} == {'scripted'}
    assert sorted(e.seed for e in check.runs if e.task == 'b') == [10, 13]
    table = markdown({**bench_tables([summary('a', 0, True)]), 'expert_check': check.table()})
    assert '| b | 2 | 2 | seed 11: finished: the cube fell; seed 12:' in table


def test_the_progress_line_of_an_episode_without_its_own_summary_says_why(tmp_path):
    """An episode that ran gets its verdict (`not run` where the tables count it so), calls and
    seconds; one whose summary the supervisor wrote (no wall_seconds) or that did not run gets
    its detail instead."""
    ran = {
        'ok': {'status': 'finished', 'run_folder': 'r', 'wall_seconds': 2.5, 'model_calls': 3},
        'killed': {'status': 'station_failed', 'run_folder': 'r', 'detail': 'the station died'},
        'late': {'status': 'interrupted', 'detail': 'not started: the bench was interrupted'},
        'cut': {'status': 'interrupted', 'run_folder': 'r', 'wall_seconds': 1.5},
    }
    said: list[str] = []
    episodes = [BenchEpisode(task, 0, 0) for task in ran]
    run_episodes(
        episodes, 'scripted', tmp_path, None, 1, said.append,
        runner=lambda job, folder, interrupts: ran[job.episode.task] | {'task': job.episode.task},
    )  # fmt: skip
    assert any(line.endswith('ok-l0-s0: finished, no success, 3 calls, 2.5 s') for line in said)
    # interrupted while it ran: counted as not run, and said so (not as a failure)
    assert any(line.endswith('cut-l0-s0: interrupted, not run, 0 calls, 1.5 s') for line in said)
    assert any(line.endswith('killed-l0-s0: station_failed, the station died') for line in said)
    assert any(
        line.endswith('interrupted, not started: the bench was interrupted') for line in said
    )


def test_an_interrupted_long_bench_says_and_lists_what_ran_not_each_episode_it_kept(tmp_path):
    """Interrupted in its first episode, a random:100000 bench printed thousands of 'interrupted,
    not started' lines (the queued episodes the pool took before it was cancelled) and its
    pages listed 99,994 of them. They are counted in the pages, not listed; bench.json has each."""
    from harness_bringup.bench import BenchInterrupted, run_bench
    from harness_recording.run_report import write_bench_page

    def first_interrupts(job, folder, interrupts):
        interrupts.add()
        return summary(job.episode.task, 0, True) | {'run_folder': None}

    said: list[str] = []
    episodes = [BenchEpisode('lift_cube', -1, seed) for seed in range(300)]
    with pytest.raises(BenchInterrupted):
        run_bench(episodes, 'scripted', tmp_path, None, 1, said.append, runner=first_interrupts)
    assert sum('not started' in line for line in said) <= 2, said[:10]  # (a race or two)
    tables = json.loads((tmp_path / 'bench.json').read_text())
    assert len(tables['episodes']) == 300  # each one, in bench.json
    listed = markdown(tables)
    assert listed.count('| lift_cube |') <= 3
    assert '299 more episodes did not start (the bench was interrupted or stopped)' in listed
    page = write_bench_page(tmp_path, tables, [None] * 300).read_text()
    assert '299 more episodes did not start' in page
    assert page.count('<span class="muted">none</span>') == 1  # one episode row: no report


@pytest.mark.parametrize(
    'arguments,message',
    [
        (['--each-axis'], '--each-axis runs the --randomize axes one at a time'),
        (['--expert-check'], '--expert-check checks sampled layouts'),
        (['--randomize', 'fog'], "unknown randomisation axis 'fog'"),
    ],
)
def test_bad_randomisation_arguments_are_refused(arguments, message, capsys):
    config = str(ROOT / 'config' / 'harness.yaml')
    with pytest.raises(SystemExit) if 'fog' in arguments else contextlib.nullcontext():
        code = main(['--config', config, 'bench', '--tasks', 'lift_cube', *arguments])
        assert code == 2
    assert message in capsys.readouterr().err


def test_episodes_the_model_service_failed_are_not_run_not_failures():
    failed = summary('a', 1, False)
    failed['status'] = 'model_service_failed'
    cut = summary('a', 2, False) | {'status': 'interrupted'}  # a Ctrl-C to the bench ended it
    tables = bench_tables([summary('a', 0, True, wall=2.0), failed, cut])
    a = tables['tasks']['a']
    assert a['episodes'] == 1 and a['not_run'] == 2 and a['success_rate'] == 1.0
    # their wall time is not the task's: the one that ran took 2 s
    assert tables['timing']['tasks']['a'] == {'wall_seconds_mean': 2.0, 'wall_seconds_max': 2.0}


def test_a_task_none_of_whose_episodes_ran_has_no_rates():
    """0.0 would read as a task that failed every time."""
    cut = summary('b', 0, False) | {'status': 'interrupted'}
    tables = bench_tables([summary('a', 0, True), cut])
    b = tables['tasks']['b']
    assert (b['episodes'], b['not_run']) == (0, 1)
    assert b['success_rate'] is None and b['score'] is None and b['env_steps'] is None
    assert tables['timing']['tasks']['b']['wall_seconds_mean'] is None
    text = markdown(tables)
    assert '| b | 0 | 1 | n/a | n/a | n/a |' in text and '| b | n/a | n/a |' in text


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_ends_the_running_episode_and_starts_no_other(tmp_path, sig):
    """The bench supervises its episodes itself: a Ctrl-C (or a SIGTERM) reaches the one
    running, which writes its run folder as interrupted; the queued one never starts; nothing
    is left."""
    config = str(ROOT / 'config' / 'harness.yaml')
    command = [sys.executable, '-m', 'harness_bringup.cli', '--config', config]
    command += ['bench', '--tasks', 'lift_cube']
    command += ['--layouts', '2', '--jobs', '1', '--model', 'scripted', '--out', str(tmp_path)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    seen: dict[int, str] = {}  # every process of the bench (a program's only while it lives)
    while not list(tmp_path.glob('*/episodes/*/*/events.jsonl')) or not program_processes(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        seen |= descendants(proc.pid)
        time.sleep(0.05)
    seen |= descendants(proc.pid)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert 'bench interrupted' in out and 'Traceback' not in out, out
    (episode,) = tmp_path.glob('*/episodes/*')  # the second layout never started
    (summary_file,) = episode.glob('*/summary.json')
    summary = json.loads(summary_file.read_text())
    assert summary['status'] == 'interrupted' and summary['layout'] == 0, summary
    # the tables of what ran: the interrupted episode and the one never started are not run
    (bench,) = tmp_path.glob('*/bench.json')
    tables = json.loads(bench.read_text())
    assert tables['interrupted'] == {'episodes': 2, 'ran': 1}
    assert tables['tasks']['lift_cube']['not_run'] == 2
    assert tables['tasks']['lift_cube']['episodes'] == 0
    assert 'Interrupted: 1 of its 2 episodes ran' in bench.with_name('bench.md').read_text()
    assert 'the tables of what ran' in out
    deadline = time.monotonic() + 10  # SIGKILLed processes can take a moment to go
    while set(seen) & set(processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = processes()
    assert {p: c for p, c in seen.items() if p in alive} == {}


class FakeSupervised:
    """`supervised` without a process: writes the run folder's summary.json with the status
    given for the interface of each call, and notes each call's argv."""

    def __init__(self, statuses, interrupts=None):
        self.statuses, self.interrupts, self.calls = statuses, interrupts, []

    def __call__(self, run, base, argv, output=None, interrupts=None, env=None):
        interface = argv[argv.index('--interface') + 1]
        self.calls.append(argv)
        run.mkdir(parents=True)
        status = self.statuses[interface]
        episode = {'type': 'episode', **base, 'interface': interface}
        if status == 'torn':
            status = 'finished'
        else:
            (run / 'events.jsonl').write_text(json.dumps(episode) + '\n')
        (run / 'summary.json').write_text(json.dumps({**base, 'status': status}))
        if self.interrupts is not None:
            self.interrupts.add()  # a Ctrl-C came while this episode ran
        return 0


@pytest.mark.parametrize(
    'source,ctrl_c,expected',
    [
        ('finished', False, 'finished'),
        ('budget_exhausted', False, 'finished'),  # failed its task: still the program's motion
        ('error', False, 'error'),
        ('interrupted', False, 'interrupted'),
        ('model_service_failed', False, 'model_service_failed'),
        ('finished', True, 'interrupted'),
        ('torn', False, 'error'),  # a summary but no episode record: not a whole run folder
    ],
)
def test_the_actions_rung_replays_its_source_only_when_whole(
    tmp_path, monkeypatch, source, ctrl_c, expected
):
    from harness_bringup.supervisor import Interrupts

    from harness_bringup import bench

    interrupts = Interrupts()
    fake = FakeSupervised(
        {'programs': source, 'actions': 'finished'}, interrupts if ctrl_c else None
    )
    monkeypatch.setattr(bench, 'supervised', fake)
    job = bench.EpisodeJob(bench.BenchEpisode('lift_cube', 0, 0, 'actions'), 'scripted', None)
    result = bench.run_episode_process(job, tmp_path, interrupts)
    assert result['status'] == expected, result
    replayed = expected == 'finished'
    assert len(fake.calls) == (2 if replayed else 1)
    (source_run,) = [f for f in (tmp_path / 'source').iterdir() if f.is_dir()]
    if replayed:
        assert fake.calls[1][-2:] == ['--actions-from', str(source_run)]
        assert Path(result['run_folder']).parent == tmp_path
    else:
        assert 'run_folder' not in result and result['interface'] == 'actions'


def test_a_set_up_problem_stops_the_bench_and_its_tables_say_so(tmp_path):
    """A refused key meets every episode: the first that meets it stops the bench (no other
    starts), and the tables count none of them as run, saying why."""
    from harness_bringup.bench import BenchSetupError, run_bench

    ran = []

    def runner(job, folder, interrupts):
        ran.append(job.episode.task)
        return {
            'task': job.episode.task,
            'layout': 0,
            'seed': 0,
            'status': 'error',
            'detail': 'the model server refused the key: invalid x-api-key',
            'setup_error': True,
            'model_calls': 0,
        }

    episodes = [BenchEpisode(task, 0, 0) for task in ('a', 'b', 'c')]
    said: list[str] = []
    with pytest.raises(BenchSetupError) as stop:
        run_bench(episodes, 'claude-sonnet-5-5', tmp_path, None, 1, said.append, runner=runner)
    assert ran == ['a'] and 'refused the key' in stop.value.detail
    # said once, and the episodes it kept from starting get no progress line of their own
    assert [line for line in said if line.startswith('the bench stops: ')] == [
        f'the bench stops: {stop.value.detail} (every episode would meet it)'
    ]
    assert not [line for line in said if '/3 b-' in line or '/3 c-' in line], said
    tables = json.loads((tmp_path / 'bench.json').read_text())
    assert tables['overall']['episodes'] == 0 and tables['overall']['not_run'] == 3
    assert tables['stopped'] == {'episodes': 3, 'ran': 0, 'why': stop.value.detail}
    details = [e['detail'] for e in tables['episodes']]
    assert details[0] == stop.value.detail  # why, not what became of the task
    assert details[1] == f'not started: the bench stopped ({stop.value.detail})'
    assert (
        'Stopped at a set-up problem every episode would meet'
        in (tmp_path / 'bench.md').read_text()
    )


def test_a_bench_whose_model_server_does_not_answer_runs_no_episode(tmp_path, monkeypatch, capsys):
    import socket

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    monkeypatch.setenv('ANTHROPIC_BASE_URL', f'http://127.0.0.1:{port}')
    config = str(ROOT / 'config' / 'harness.yaml')
    code = main(
        ['--config', config, 'bench', '--tasks', 'lift_cube', '--model', 'claude-sonnet-5-5']
        + ['--layouts', '1', '--out', str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f'cannot reach the model server at http://127.0.0.1:{port}' in err
    assert list(tmp_path.iterdir()) == []  # before the first episode


def test_a_refused_key_stops_a_bench_on_warm_stations_after_one_episode(
    tmp_path, monkeypatch, capsys
):
    """The key is refused at the first episode's first call: a set-up problem, not the
    station's; the episode is not run again, no other starts, and the bench says it in one
    line (exit 2), as harness run would."""
    from messages_server import MessagesServer, Scripted

    config = str(ROOT / 'config' / 'harness.yaml')
    with MessagesServer([Scripted(status=401)]) as server:
        monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
        monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url)
        code = main(
            ['--config', config, 'bench', '--tasks', 'lift_cube', 'stack_blocks_two']
            + ['--model', 'claude-sonnet-5-5', '--layouts', '1', '--jobs', '1']
            + ['--out', str(tmp_path)]
        )
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert 'refused the key' in err and 'the bench stopped' in err
    assert asked == 1  # one episode, once
    (bench,) = tmp_path.iterdir()
    assert [p.name for p in (bench / 'stations').iterdir()] == ['station-1']
    tables = json.loads((bench / 'bench.json').read_text())
    assert tables['stopped']['ran'] == 1 and tables['overall']['not_run'] == 2
    (first,) = (bench / 'episodes' / 'lift_cube-l0-s0').glob('*/summary.json')
    summary = json.loads(first.read_text())
    assert summary['setup_error'] is True and summary['status'] == 'error', summary
    assert not list((bench / 'episodes').glob('stack_blocks_two-l0-s0/*/summary.json'))
    second = tables['episodes'][1]
    assert second['status'] == 'not_started' and 'the bench stopped' in second['detail']
