"""The `harness` command: bad input gets one clear line and exit 2; a program runs an episode."""

import json
import os
import signal
from pathlib import Path

import pytest
from harness_bringup.cli import main
from policy_stand_ins import expert_catalogue

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    'argv,message',
    [
        (
            ['program', 'lift_cubes', 'x.py'],
            "unknown task 'lift_cubes'; known tasks: assemble_peg_ring",
        ),
        (['program', 'lift_cube', 'missing.py'], 'program file missing.py does not exist'),
        (
            ['program', 'lift_cube', 'x.py', '--layout', '7'],
            'lift_cube has layouts 0..2 and random, not 7',
        ),
        (
            ['--config', 'nope.yaml', 'program', 'lift_cube', __file__],
            'config file nope.yaml does not',
        ),
        (['run', 'lift_cubes'], "unknown task 'lift_cubes'; known tasks: assemble_peg_ring"),
        (['run', 'lift_cube', '--layout', '3'], 'lift_cube has layouts 0..2 and random, not 3'),
        (['run', 'lift_cube', '--model', 'claude-sonnet-5-5'], 'needs ANTHROPIC_API_KEY'),
        (['bench', '--tasks', 'lift_cube', 'nope'], "unknown task 'nope'"),
        (['bench', '--layouts', '4'], 'has 3 fixed layouts, fewer than --layouts 4 (random:4'),
        (
            ['run', 'lift_cube', '--interface', 'actions', '--actions-from', 'nope'],
            '--actions-from: nope is not a run folder: it has no events.jsonl',
        ),
        (
            ['run', 'lift_cube', '--actions-from', 'nope'],
            '--actions-from is replayed by --model scripted --interface actions, not by '
            '--model scripted --interface programs',
        ),
        (
            ['run', 'lift_cube', '--model', 'my-model', '--max-cost-usd', '1'],
            "the price table has no price for 'my-model'",
        ),
        # where a command writes: checked before anything starts
        (['run', 'lift_cube', '--out', __file__], 'is a file, not a folder'),
        (['run', 'lift_cube', '--out', f'{__file__}/runs'], 'is inside'),
        (['run', 'lift_cube', '--out', ''], "--out '' names no folder"),
        (['program', 'lift_cube', __file__, '--out', __file__], 'is a file, not a folder'),
        (['bench', '--tasks', 'lift_cube', '--out', __file__], 'is a file, not a folder'),
        (['bench', '--tasks', 'lift_cube', '--out', '/tmp/a\nb'], 'has a line break'),
        (['run', 'lift_cube', '--out', '/tmp/' + 'x/' * 1800], 'leave room for the run folders'),
        (['mcp', 'lift_cube', '--journal', f'{__file__}/j.jsonl'], 'is inside'),
        (['export', '--lerobot', f'{__file__}/data', 'run'], 'is inside'),
        (['bench', '--tasks', 'lift_cube', 'lift_cube'], 'names lift_cube more than once'),
        (
            ['bench', '--layouts', 'random:3', '--seed-base', str(2**63 - 2)],
            '--seed-base 9223372036854775806 + 3 seeds passes',
        ),
        # a seed the layouts do not take (it had been dropped without a word)
        (['bench', '--layouts', 'random:3', '--seed', '5'], 'random:N takes --seed-base'),
        (['bench', '--layouts', '2', '--seed-base', '5'], 'fixed ones take --seed'),
        (['bench', '--seed-base', '5'], 'fixed ones take --seed'),  # (the default: 3 fixed)
        (
            ['demos', 'lift_cube', '--layouts', '3', '--seed-base', '5', '--out', '/tmp/never'],
            'fixed ones run with seed 0',  # (demos has no --seed)
        ),
        (
            ['plan-collection', 'runs', '--budget', '1', '--out', '/tmp/never-written.json']
            + ['--pool-base', str(2**63 - 1), '--pool-size', '2'],
            '--pool-base 9223372036854775807 + 2 seeds passes',
        ),
        (['--config', '/dev/zero', 'run', 'lift_cube'], 'config file /dev/zero is not a regular'),
        # (after the command too, as the guide shows: it was an unrecognized argument)
        (['run', 'lift_cube', '--config', '/nonexistent.yaml'], '/nonexistent.yaml does not'),
        (['policy', 'serve', 'x', '--config', '/nonexistent.yaml'], '/nonexistent.yaml does'),
        # an address the MCP server could not serve: said before a station starts
        (['mcp', 'lift_cube', '--http', '0'], '--http needs a port from 1 to 65535'),
        (['mcp', 'lift_cube', '--http', '8799', '--host', 'bad host'], 'cannot serve HTTP at'),
        # (it bound every interface, and printed the URL http://:8799/mcp)
        (['mcp', 'lift_cube', '--http', '8799', '--host', ''], '--host needs an address'),
        (['export', 'runs/a', 'runs/./a', '--lerobot', '/tmp/never'], 'named more than once'),
        (['export', '/tmp/harness-test-loop/a', '--lerobot', '/tmp/never'], 'Symlink loop'),
        # options that would be taken and do nothing
        (['tickets', __file__, '--note', 'fixed'], '--note goes with --resolve ID'),
        (['run', 'lift_cube', '--strategy', 'A'], '--strategy needs policies (--policies)'),
        # a path too long for the filesystem, whichever command meets it
        (['export', f'/tmp/{"a" * 260}', '--lerobot', '/tmp/never-made'], 'File name too long'),
        (['program', 'lift_cube', f'/tmp/{"a" * 260}'], 'too long'),
        (['replay', f'/tmp/{"a" * 260}'], f'/tmp/{"a" * 20}'),
    ],
)
def test_bad_input_is_one_clear_line(argv, message, capsys, monkeypatch):
    monkeypatch.delenv('ANTHROPIC_API_KEY', raising=False)
    loop = Path('/tmp/harness-test-loop')  # a link loop: a is b, b is a
    loop.mkdir(exist_ok=True)
    for name, to in (('a', 'b'), ('b', 'a')):
        if not (loop / name).is_symlink():
            (loop / name).symlink_to(loop / to)
    if argv[0] in ('run', 'bench', 'mcp'):
        monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    'host,warned', [('127.0.0.1', False), ('localhost', False), ('::1', False), ('0.0.0.0', True)]
)
def test_an_mcp_host_beyond_this_machine_is_warned_about(host, warned):
    from harness_bringup.mcp_command import _exposed

    assert bool(_exposed(host)) == warned
    assert not warned or 'clear text' in _exposed(host)


def test_bad_input_leaves_no_output_folder(tmp_path, capsys):
    """The folders made for --out are removed when the command fails on other input; one that
    was there stays."""
    assert main(['run', 'lift_cubes', '--out', str(tmp_path / 'a' / 'runs')]) == 2
    assert not (tmp_path / 'a').exists()
    assert main(['run', 'lift_cubes', '--out', str(tmp_path)]) == 2
    assert tmp_path.is_dir()
    mine = tmp_path / 'mine'  # an empty folder of the user's, reached through `..`
    mine.mkdir()
    assert main(['run', 'lift_cubes', '--out', str(tmp_path / 'new' / '..' / 'mine' / 'x')]) == 2
    assert mine.is_dir() and not (mine / 'x').exists() and not (tmp_path / 'new').exists()
    assert "unknown task 'lift_cubes'" in capsys.readouterr().err


def test_demos_refused_leaves_nothing_and_names_an_out_it_cannot_make(tmp_path, capsys):
    """`harness demos` as the other commands: an --out that cannot be made is one line (exit
    2), and a collection refused before its bench ran leaves no folder of it."""
    (tmp_path / 'afile').write_text('')
    assert main(['demos', 'lift_cube', '--out', str(tmp_path / 'afile' / 'sub')]) == 2
    assert 'is inside' in capsys.readouterr().err
    out = tmp_path / 'collection'
    assert main(['demos', 'lift_cube', '--layouts', '99', '--out', str(out)]) == 2
    assert 'fixed layouts' in capsys.readouterr().err and not out.exists()


def test_syntax_error_in_the_program(tmp_path, capsys):
    bad = tmp_path / 'bad.py'
    bad.write_text('pick(\n')
    assert main(['program', 'lift_cube', str(bad)]) == 2
    assert 'bad.py:' in capsys.readouterr().err


@pytest.mark.parametrize(
    'content,said',
    [
        # (50 MB started the graph, failed in the channel, and filled the run folder)
        (b'#' * (2**20 + 1) + b'\n', 'larger than 1048576 bytes'),
        (b'x = 1\x00\n', 'nul.py: source code string cannot contain null bytes'),  # (nul.py:None)
        (b'\xff\xfe = 1\n', 'is not UTF-8 text: invalid start byte at byte 0'),
    ],
)
def test_a_program_file_past_the_bound_or_not_text_is_one_line(tmp_path, capsys, content, said):
    program = tmp_path / 'nul.py'
    program.write_bytes(content)
    out = tmp_path / 'runs'
    assert main(['program', 'lift_cube', str(program), '--out', str(out)]) == 2
    assert said in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    'argv',
    [
        ['program', 'lift_cube'],
        ['run'],
        ['run', 'lift_cube', '--max-model-calls', '0'],
        ['run', 'lift_cube', '--max-cost-usd', '-1'],
        ['run', 'lift_cube', '--max-wall-seconds', '0'],
        ['run', 'lift_cube', '--perception', 'bogus'],
        ['bench', '--perception', 'no.such.module'],
        ['run', 'lift_cube', '--layout', 'two'],
        ['run', 'lift_cube', '--layout', '-1'],
        ['run', 'lift_cube', '--seed', '-3'],
        ['run', 'lift_cube', '--seed', str(2**63)],  # a ROS int64
        ['run', 'lift_cube', '--seed', 'abc'],
        ['run', 'lift_cube', '--max-model-calls', str(2**63)],
        ['replay', 'run', '--rate', '1e-300'],
        ['replay', 'run', '--delay', '1e12'],
        ['bench', '--layouts', 'random:0'],
        ['bench', '--layouts', 'random:many'],
        ['bench', '--layouts', 'random:100000001'],  # (every episode is planned up front)
        ['bench', '--seed-base', '-2'],
        ['bench', '--interface', 'programs,tools'],
        ['run', 'lift_cube', '--interface', 'prose'],
        ['run', 'lift_cube', '--randomize', 'lighting,fog'],
        ['run', 'lift_cube', '--randomize', 'camera,camera'],
        ['run', 'lift_cube', 'extra\nline'],  # (said on one line)
    ],
)
def test_bad_flags_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert 'harness' in err and len(err.strip().splitlines()) == 1, err  # (no usage block)


def test_a_bad_config_file_is_one_clear_line(tmp_path, capsys):
    config = tmp_path / 'harness.yaml'
    config.write_text('driver:\n  ros__parameters:\n    max_model_calls: many\n')
    assert main(['--config', str(config), 'run', 'lift_cube']) == 2
    err = capsys.readouterr().err
    assert (
        'driver.max_model_calls must be a 64-bit int' in err and len(err.strip().splitlines()) == 1
    )


def test_run_from_another_folder_reads_the_workspace_config(tmp_path, monkeypatch, capsys):
    """`harness run` outside the workspace (no ./config, no $HARNESS_CONFIG) reads the
    workspace's config; with no file at all, the error says so, not which key is unset."""
    from harness_bringup.run import UsageError, prepare
    from harness_types.config import GraphConfig

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('HARNESS_CONFIG', raising=False)
    monkeypatch.delenv('ANTHROPIC_API_KEY', raising=False)
    # the missing key is checked after the prompts are read, before any graph starts
    assert main(['run', 'lift_cube', '--model', 'claude-sonnet-4-5']) == 2
    assert 'needs ANTHROPIC_API_KEY' in capsys.readouterr().err
    with pytest.raises(UsageError, match='no configuration file was found'):
        prepare(GraphConfig(), 'lift_cube', 0, 0)


def test_program_runs_an_episode_and_writes_the_run_folder(tmp_path, capsys):
    code = main(
        [
            '--config',
            str(ROOT / 'config' / 'harness.yaml'),
            'program',
            'lift_cube',
            str(ROOT / 'src/harness_bench/harness_bench/reference/lift_cube.py'),
            '--out',
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (run,) = tmp_path.iterdir()
    summary = json.loads((run / 'summary.json').read_text())
    # The lift succeeds inside the cell: the episode ends there (the bench's rule).
    assert summary['status'] == 'episode_ended' and summary['outcome']['success'], summary
    assert summary['perception'] == 'pixels' and summary['backend'] == 'mujoco'  # (as run's)
    assert 'SUCCESS' in out and 'run folder' in out
    entries = [json.loads(line) for line in (run / 'kernel.log').read_text().splitlines()]
    calls = [e['call'] for e in entries if e.get('call', '(kernel)') != '(kernel)']
    assert calls[:2] == ['locate', 'pick']
    assert (run / 'params.yaml').is_file()
    (cell,) = [json.loads(line) for line in (run / 'events.jsonl').read_text().splitlines()]
    assert cell['status'] == 'episode_ended' and cell['executions']


def test_a_programs_traceback_gives_its_files_line_numbers(tmp_path, capsys):
    program = tmp_path / 'broken.py'
    program.write_text("print('task:', INSTRUCTION)\nx = 1\nraise ValueError('on line three')\n")
    config = str(ROOT / 'config' / 'harness.yaml')
    argv = ['--config', config, 'program', 'lift_cube', str(program), '--out', str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert 'task: Pick up the red cube' in out  # INSTRUCTION is set, in a cell of its own
    assert 'line 3, in <module>' in out and 'ValueError: on line three' in out, out


@pytest.mark.parametrize(
    'catalogue,message',
    [
        ('policies: [1, 2]', 'expected a mapping `policies: {name: {...}}`'),
        ('policies:\n  p: {endpoint: ws://h:1}', "policy 'p' needs 'description'"),
        (
            'policies:\n  p: {description: d, endpoint: http://h:1}',
            'p.endpoint must be a ws:// address',
        ),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", action_hz: fast}',
            'p.action_hz must be a finite number',
        ),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", finishes: [lift]}',
            'p.finishes names kinds it did not learn',
        ),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", cameras: [cam_top]}',
            'no camera cam_top',
        ),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", learned: [lfit]}',
            "p.learned: no task kind 'lfit'; kinds: ",
        ),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", observation_keys:'
            ' {observation/images/cam_head: observation/state}}',
            'p.observation_keys renames onto observation/state, which the harness sends',
        ),
        ('policies:\n  p: {description: d, endpoint: "ws://h:1", gpu: 1}', "no field 'gpu'"),
        ('policies:\n  p: {description: d, endpoint: "ws://h:1", 1: a, b: c}', "no field '1'"),
        ('policies:\n  p: {description: d, endpoint: "ws://[::1"}', 'p.endpoint must be a ws://'),
        ('policies:\n  p: {description: d, endpoint: "ws://h:99999"}', 'from 0 to 65535'),
        # (they loaded, then a traceback: an HTTP request cannot carry a space; the servers
        # here listen on IPv4; a NUL in a path)
        ('policies:\n  p: {description: d, endpoint: "ws://127.0.0.1 :8123"}', 'p.endpoint'),
        ('policies:\n  p: {description: d, endpoint: "ws://[::1]:8123"}', 'an IPv4 address'),
        (
            'policies:\n  p: {description: d, endpoint: "ws://h:1", serve: lerobot, '
            'checkpoint: "a\\0b"}',
            'p.checkpoint holds a NUL byte',
        ),
        # (the broker passes a name on a command line: `--help` was taken as its option)
        ('policies:\n  --help: {description: d, endpoint: "ws://h:1"}', "name '--help' must be"),
        ('policies:\n  a/b: {description: d, endpoint: "ws://h:1"}', "name 'a/b' must be"),
        ('policies:\n  1: {description: d, endpoint: "ws://h:1"}', 'name 1 must be'),
        (b'policies: \xff\xfe\n', 'not UTF-8 text'),
        ('policies: ' + '[' * 50000 + ']' * 50000, 'nested more than 64 levels deep'),
        (
            'policies:\n'
            '  p: {description: d, endpoint: "ws://127.0.0.1:7011", serve: scripted_expert}\n'
            '  q: {description: d, endpoint: "ws://127.0.0.1:7011", serve: scripted_expert}\n',
            'q.endpoint: p is served at ws://127.0.0.1:7011 too',
        ),
    ],
)
def test_a_bad_policy_catalogue_is_one_clear_line(tmp_path, capsys, catalogue, message):
    path = tmp_path / 'policies.yaml'
    path.write_bytes(catalogue if isinstance(catalogue, bytes) else catalogue.encode())
    config = str(ROOT / 'config' / 'harness.yaml')
    for argv in (
        ['run', 'lift_cube', '--policies', str(path)],
        ['program', 'lift_cube', __file__, '--policies', str(path)],
        ['policy', 'serve', 'p', '--policies', str(path)],
    ):
        assert main(['--config', config, *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, (argv, err)


def test_a_trained_policy_without_its_checkpoint_is_said_before_its_server_starts(tmp_path, capsys):
    """Where its server is to start (a task of its kind, `policy serve`), naming the
    catalogue and the key, before the learning extra is checked; a catalogue whose entry no
    command of the moment serves still loads."""
    path = tmp_path / 'policies.yaml'
    path.write_text(
        'policies:\n  p: {description: d, endpoint: "ws://127.0.0.1:0", serve: lerobot,'
        ' checkpoint: /nonexistent/ckpt, learned: [press]}\n'
    )
    said = f'{path}: p.checkpoint: /nonexistent/ckpt is not a folder'
    config = str(ROOT / 'config' / 'harness.yaml')
    assert main(['--config', config, 'policy', 'serve', 'p', '--policies', str(path)]) == 2
    assert said in capsys.readouterr().err
    argv = ['--config', config, 'run', 'press_button', '--policies', str(path)]
    assert main([*argv, '--out', str(tmp_path / 'runs')]) == 2
    assert said in capsys.readouterr().err
    (run,) = (tmp_path / 'runs').iterdir()  # the episode that could not start says why
    assert json.loads((run / 'summary.json').read_text())['status'] == 'policy_service_failed'
    from harness_policy.catalog import load_catalog

    assert load_catalog(path).get('p').checkpoint == '/nonexistent/ckpt'


def test_policy_flags_say_what_is_wrong(tmp_path, capsys):
    config = str(ROOT / 'config' / 'harness.yaml')
    assert main(['--config', config, 'run', 'lift_cube', '--policies', 'nope.yaml']) == 2
    assert 'policy catalogue nope.yaml does not exist' in capsys.readouterr().err
    assert main(['--config', config, 'policy', 'serve', 'nobody']) == 2
    assert "no policy is called 'nobody'; policies: act_lift_cube, " in capsys.readouterr().err
    path = tmp_path / 'policies.yaml'
    path.write_text('policies:\n  far: {description: d, endpoint: "ws://h:1"}\n')
    assert main(['--config', config, 'policy', 'serve', 'far', '--policies', str(path)]) == 2
    assert 'policy far is external' in capsys.readouterr().err


@pytest.mark.parametrize('status,code', [('error', 1), ('interrupted', 130), ('finished', 0)])
def test_the_scripted_actions_rung_replays_only_a_whole_source(
    tmp_path, capsys, monkeypatch, status, code
):
    """`harness run --interface actions --model scripted`: the programs-rung episode runs
    first (here a stand-in for its supervised process); a source cut short is not replayed,
    and the exit says why."""
    from harness_bringup import supervisor

    calls = []

    def fake_supervised(run, base, argv, *_, **__):
        interface = argv[len(argv) - argv[::-1].index('--interface')]  # the last one given
        calls.append(argv)
        run.mkdir(parents=True)
        episode = {'type': 'episode', **base, 'interface': interface}
        (run / 'events.jsonl').write_text(json.dumps(episode) + '\n')
        ended = status if interface == 'programs' else 'finished'
        (run / 'summary.json').write_text(json.dumps({**base, 'status': ended}))
        return {'error': 1, 'interrupted': 130}.get(ended, 0)

    monkeypatch.setattr(supervisor, 'supervised', fake_supervised)
    config = str(ROOT / 'config' / 'harness.yaml')
    argv = ['--config', config, 'run', 'lift_cube', '--interface', 'actions', '--out']
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert main([*argv, str(tmp_path)]) == code
    finally:  # exit 130 ignores Ctrl-C until the process exits: not this test process's
        for s, handler in handlers.items():
            signal.signal(s, handler)
    out = capsys.readouterr().out
    assert len(calls) == (2 if status == 'finished' else 1)
    if status == 'error':
        assert 'nothing to replay:' in out and 'ended with status error' in out
    if status == 'finished':
        source = next(p for p in sorted(tmp_path.iterdir()))
        assert calls[1][-2:] == ['--actions-from', str(source)]


def test_a_supervised_actions_replay_without_its_source_is_refused(tmp_path, capsys, monkeypatch):
    """Its supervisor runs the source first and names it; a child never runs it itself."""
    from harness_bringup.supervisor import SUPERVISED_FOLDER

    monkeypatch.setenv(SUPERVISED_FOLDER, str(tmp_path / 'run'))
    config = str(ROOT / 'config' / 'harness.yaml')
    assert main(['--config', config, 'run', 'lift_cube', '--interface', 'actions']) == 2
    assert 'needs --actions-from' in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()


def test_a_model_name_cannot_move_the_run_folder(tmp_path):
    from harness_bringup.run import run_folder_path

    folder = run_folder_path(tmp_path / 'runs', 'lift_cube', 0, 0, 'x/../../y')
    assert folder.parent == tmp_path / 'runs' and folder.name.endswith('-x_.._.._y')


def test_serve_takes_ros_arguments_and_says_which_are_wrong(monkeypatch, capsys):
    from harness_bringup.domain import claim_domain_id

    monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    claim = claim_domain_id()  # a domain of its own, which serve claims in turn
    claim.release()
    monkeypatch.setenv('ROS_DOMAIN_ID', str(claim.domain_id))
    assert main(['serve', '--ros-args', '--no-such-ros-flag']) == 2  # before any node starts
    assert 'ROS did not start (ROS arguments: --no-such-ros-flag)' in capsys.readouterr().err
    assert main(['run', 'lift_cube', '--ros-args', '-p', 'x:=1']) == 2
    assert 'only `harness serve` takes --ros-args' in capsys.readouterr().err
    # refused by the worker's own checks, as it starts (its node half made: then destroyed)
    assert main(['serve', '--ros-args', '-p', 'worker:camera_every_ticks:=-3']) == 2
    err = capsys.readouterr().err
    assert 'camera_every_ticks must be >= 1, not -3' in err and 'Traceback' not in err, err


def test_serve_names_a_parameter_override_no_node_declares_or_holds():
    from harness_bringup.serve import UNDECLARED, override_problem, parameter_overrides

    args = ['-p', 'rate_hz:=25', '--param', '/**:x.y:=a:b', '-r', 'a:=b', '-p', 'skill_server:z:=1']
    assert parameter_overrides(args) == [
        (None, 'rate_hz', '25'),
        (None, 'x.y', 'a:b'),
        ('skill_server', 'z', '1'),
    ]
    held = {'worker': {'rate_hz': 25.0, 'live': True}, 'skill_server': {'z': 2, 'name': 'a'}}

    def value_of(node, name):
        return held[node].get(name, UNDECLARED)

    assert (
        override_problem(['-p', 'rate_hz:=25', '-p', 'z:=2', '-p', 'name:=a'], value_of, held)
        is None
    )
    assert override_problem(['-p', 'live:=True', '-p', 'rate_hz:=2.5e1'], value_of, held) is None
    assert override_problem(['-p', 'worker:z:=2'], value_of, held) == (
        '-p z: no such parameter of worker'
    )
    assert 'no such parameter of worker or skill_server' in override_problem(
        ['-p', 'rate_hx:=25'], value_of, held
    )
    assert "no node 'kernel' here" in override_problem(['-p', 'kernel:z:=1'], value_of, held)
    # rcl keeps the parameter file's number over a text override without a word
    assert override_problem(['-p', 'rate_hz:=abc'], value_of, held) == (
        '-p rate_hz:=abc: worker.rate_hz must be a number; it kept 25.0'
    )
    assert 'must be true or false' in override_problem(['-p', 'live:=1'], value_of, held)
    # read as rcl reads a value (YAML): yes is true, 0x2 is 2
    assert override_problem(['-p', 'live:=yes', '-p', 'z:=0x2'], value_of, held) is None


def test_serve_refuses_a_misspelt_parameter_before_it_serves(tmp_path):
    """rclpy keeps an override nobody declares without a word; the station would run without
    the setting its user meant."""
    import subprocess
    import sys

    from harness_bringup.domain import claim_domain_id
    from harness_bringup.processes import child_environment

    claim = claim_domain_id()
    claim.release()  # (serve claims its domain itself)
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'harness_bringup.cli',
            '--config',
            str(ROOT / 'config' / 'harness.yaml'),
        ]
        + ['serve', '--ros-args', '-p', 'worker:no_such_setting:=1'],
        env={**child_environment(claim.domain_id), 'TMPDIR': str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == 'harness: -p no_such_setting: no such parameter of worker'
    assert not list(tmp_path.glob('harness-serve-*'))  # its parameter file's folder is gone


@pytest.mark.parametrize('domain', ['abc', '999'])
def test_attach_to_a_domain_that_cannot_be(domain, monkeypatch, capsys):
    monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    monkeypatch.setenv('ROS_DOMAIN_ID', domain)
    assert main(['run', 'lift_cube', '--attach']) == 2
    assert 'ROS_DOMAIN_ID must be' in capsys.readouterr().err


@pytest.mark.parametrize(
    'section,said',
    [
        ('worker:\n  ros__parameters:\n    backend: nosuch\n', 'no module harness_worker.backends'),
        ('driver:\n  ros__parameters:\n    cameras: [cam_nosuch]\n', "no camera 'cam_nosuch'"),
        ('driver:\n  ros__parameters:\n    prompts: harness.yaml\n', 'is not a folder'),
        # (its own graph runs in a private ROS domain: no ros2_control controller is there)
        ('worker:\n  ros__parameters:\n    backend: ros2_control\n', 'and run with --attach'),
        (
            'kernel:\n  ros__parameters:\n    api: pick,mov_eef\n',
            "kernel.api: no API name 'mov_eef'",
        ),
        ('driver:\n  ros__parameters:\n    outcome_model: no.json\n', 'driver.outcome_model: '),
        ('driver:\n  ros__parameters:\n    tier3_report_card: no.md\n', 'tier3_report_card: '),
    ],
)
def test_settings_the_graph_would_refuse_are_said_before_it_starts(tmp_path, capsys, section, said):
    config = tmp_path / 'harness.yaml'
    config.write_text(section)
    commands = [['run', 'lift_cube']]
    if 'prompts' not in section:  # a program has no model: prompts are not read
        commands.append(['program', 'lift_cube', __file__])
    for command in commands:
        assert main(['--config', str(config), *command]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err


def test_an_existing_dataset_folder_is_a_place_to_export_to(tmp_path, capsys):
    # --lerobot names a folder that export may replace: the check lets it through to export
    data = tmp_path / 'data'
    data.mkdir()
    assert main(['export', '--lerobot', str(data), str(tmp_path / 'no-run')]) == 2
    err = capsys.readouterr().err
    assert f"--lerobot '{data}'" not in err and 'no-run' in err, err


def test_a_policy_server_that_cannot_start_leaves_a_run_folder(tmp_path, monkeypatch, capsys):
    """The catalogue's local server exits before it answers (its port is held by something that
    is not a policy server): the run ends before any graph starts, in one line, and its run
    folder says why (events, summary, report)."""
    import socket

    monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    with socket.socket() as squatter:
        squatter.bind(('127.0.0.1', 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        catalog = expert_catalogue(tmp_path, port)
        argv = ['run', 'lift_cube', '--policies', str(catalog), '--out', str(tmp_path / 'runs')]
        assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'policy server scripted_expert exited with status' in err[0], err
    (run,) = (tmp_path / 'runs').iterdir()
    summary = json.loads((run / 'summary.json').read_text())
    # not run (a bench counts it so), and said why
    assert (
        summary['status'] == 'policy_service_failed' and 'exited with status' in summary['detail']
    )
    assert summary['task'] == 'lift_cube'
    events = [json.loads(x) for x in (run / 'events.jsonl').read_text().splitlines()]
    assert events[-1]['type'] == 'end' and (run / 'report.html').is_file()
    assert (run / 'policy_scripted_expert.log').is_file()  # the server's own words


def test_a_workspace_path_with_a_space_is_refused_before_set_up(tmp_path):
    """colcon's setup scripts and installed commands cannot run from a path with a space: the
    set-up (first step of ./harness and of the tests) says so at once, and makes nothing."""
    import shutil
    import subprocess

    tools = tmp_path / 'my ws' / 'tools'
    tools.mkdir(parents=True)
    shutil.copy(ROOT / 'tools' / 'setup.sh', tools / 'setup.sh')
    run = subprocess.run(
        ['bash', str(tools / 'setup.sh')], capture_output=True, text=True, check=False
    )
    assert run.returncode == 2, run.stderr
    assert "the workspace's path has a space" in run.stderr and 'my ws' in run.stderr
    assert sorted(p.name for p in (tmp_path / 'my ws').iterdir()) == ['tools']


@pytest.mark.parametrize(
    'argv,message',
    [
        (
            ['policy', 'adopt', 'nope', '--for', 'lift_cube'],
            'is not a `harness policy train` folder',
        ),
        (['policy', 'adopt', 'x', '--for', 'nope'], 'no task nope'),
        (['policy', 'adopt', 'x', '--for', 'lift_cube', '--layouts', '3'], 'must be random:N'),
        (['policy', 'adopt', 'x', '--for', 'lift_cube', '--min-finish', '2'], 'must be in [0, 1]'),
        (['plan-collection', 'nope', '--budget', '3'], 'nope is not a folder'),
        (['outcome-model', 'train', 'nope'], 'nope is not a folder'),
        (['outcome-model', 'train', '.', '--held-out', '1'], 'must be between 0 and 1'),
        (['demos', 'lift_cube', '--plan', 'p.json'], 'name the TASKs to collect or a --plan'),
        (['demos'], 'name the TASKs to collect or a --plan'),
        (['bench', '--plan', 'nope.json'], 'plan nope.json does not exist'),
        (['bench', '--plan', f'{__file__}/p.json'], 'cannot be read: Not a directory'),
        (['demos', 'lift_cube', '--include', '.'], 'is not a `harness demos` folder'),
    ],
)
def test_the_flywheels_commands_say_what_is_wrong_in_one_line(argv, message, tmp_path, capsys):
    out = ['--out', str(tmp_path / 'out' / ('p.json' if argv[0] != 'demos' else 'd'))]
    if argv[0] == 'bench':
        out = ['--out', str(tmp_path / 'out')]
    assert main([*argv, *out]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / 'out').exists()


def test_outcome_model_refuses_an_out_it_would_write_over(tmp_path, capsys):
    """(The model was written, then overwritten by its report card; a source run's
    events.jsonl was replaced by the model.)"""
    source = tmp_path / 'bench'
    (source / 'run').mkdir(parents=True)
    card = tmp_path / 'm' / 'outcome_report_card.md'
    assert main(['outcome-model', 'train', str(source), '--out', str(card)]) == 2
    assert "is the report card's name" in capsys.readouterr().err
    inside = source / 'run' / 'events.jsonl'
    assert main(['outcome-model', 'train', str(source), '--out', str(inside)]) == 2
    assert 'is inside the source' in capsys.readouterr().err
    assert not inside.exists() and not card.parent.exists()


def test_a_candidate_adopted_over_a_stand_in_goes_before_it_and_the_stand_in_stays(
    tmp_path, monkeypatch, capsys
):
    """press_button's incumbent in the shipped catalogue is scripted_expert (a stand-in that
    finishes it): an adopted candidate is a new entry placed before it (the strategy rule takes
    the first), and the candidate's own side ran with no other policy of its kind. The benches
    are faked here (run folders written as a bench writes them); the gate end to end is
    test_policies.py's."""
    import json
    import shutil

    import yaml
    from harness_learning.training import CHECKPOINT, RECORD
    from harness_policy.catalog import load_catalog

    from harness_bringup import adopt_command

    shutil.copytree(ROOT / 'config', tmp_path / 'config')
    shutil.copytree(ROOT / 'prompts', tmp_path / 'prompts')
    shutil.copytree(ROOT / 'policies', tmp_path / 'policies')
    catalogue = tmp_path / 'config' / 'policies.yaml'
    dataset = tmp_path / 'demos'
    (dataset / 'meta' / 'episodes').mkdir(parents=True)
    (dataset / 'meta' / 'info.json').write_text('{}')
    candidate = tmp_path / 'candidate'
    (candidate / CHECKPOINT).mkdir(parents=True)
    (candidate / CHECKPOINT / 'model.safetensors').write_bytes(b'w')
    record = {'status': 'done', 'dataset': str(dataset), 'demonstrations': 9, 'steps_done': 9}
    record['tasks'] = {'Press the red button, not the blue one.': ['red button']}
    (candidate / RECORD).write_text(json.dumps(record))
    sides = []

    def bench(cli, argv):
        out = Path(argv[argv.index('--out') + 1])
        policies = argv[argv.index('--policies') + 1] if '--policies' in argv else ''
        sides.append(yaml.safe_load(Path(policies).read_text()) if policies else None)
        finished = out.name == 'candidate'
        for k in range(2):
            run = out / 'b' / 'episodes' / f'e{k}' / 'run'
            run.mkdir(parents=True)
            detail = 'episode ended: the task succeeded' if finished else ''
            event = 'EPISODE_ENDED' if finished else 'COMPLETED'
            line = {'execution': 'run_policy', 'event': event, 'detail': detail, 'ticks': 9}
            (run / 'kernel.log').write_text(json.dumps(line) + '\n')
            summary = {'task': 'press_button', 'layout': -1, 'seed': 9000 + k}
            summary |= {'status': 'finished', 'outcome': {'success': True}}
            (run / 'summary.json').write_text(json.dumps(summary))
        return 0

    monkeypatch.setattr(adopt_command, '_bench', bench)
    argv = ['--config', str(tmp_path / 'config' / 'harness.yaml'), 'policy', 'adopt']
    argv += [str(candidate), '--for', 'press_button', '--layouts', 'random:2']
    assert main([*argv, '--out', str(tmp_path / 'g0')]) == 2
    assert 'has a policy act_press_button already' in capsys.readouterr().err
    # a folder where the new version would be stored: refused before any bench runs
    blocked = tmp_path / 'config' / 'policies' / 'act_press_new-v1'
    blocked.mkdir(parents=True)
    assert main([*argv, '--name', 'act_press_new', '--out', str(tmp_path / 'gb')]) == 2
    assert 'act_press_new-v1 exists, where version 1' in capsys.readouterr().err and not sides
    blocked.rmdir()
    argv += ['--name', 'act_press_new', '--out', str(tmp_path / 'g1')]
    assert main(argv) == 0, capsys.readouterr().err
    learned_press = [n for n, e in sides[0]['policies'].items() if 'press' in e.get('learned', [])]
    assert learned_press == ['act_press_new']  # the candidate alone for its kind
    assert 'scripted_expert' in sides[1]['policies']  # the incumbent's side: the catalogue
    order = list(load_catalog(catalogue).policies)
    assert order.index('act_press_new') < order.index('scripted_expert')
    spec = load_catalog(catalogue).get('act_press_new')
    assert spec.version == 1 and spec.learned == ('press',) and spec.finishes == ('press',)
    instruction = next(iter(record['tasks']))
    assert load_catalog(catalogue).for_kind('press', instruction).name == 'act_press_new'


def test_a_plan_refuses_the_layout_flags_it_would_leave_unused(tmp_path, capsys):
    plan = tmp_path / 'plan.json'
    plan.write_text(json.dumps({'layouts': [{'task': 'lift_cube', 'seed': 4}]}))
    for flags in (['--layouts', '3'], ['--seed', '9'], ['--seed-base', '0']):
        argv = ['bench', '--plan', str(plan), *flags, '--out', str(tmp_path / 'out')]
        assert main(argv) == 2
        assert f'leave out {flags[0]}' in capsys.readouterr().err


def test_demos_from_a_plan_get_past_the_flags_a_plan_refuses(tmp_path, capsys):
    """harness demos --plan: the collector's own defaults are not flags the user gave (the
    plan's unknown task is the next thing said)."""
    plan = tmp_path / 'plan.json'
    plan.write_text(json.dumps({'layouts': [{'task': 'nope', 'seed': 4}]}))
    assert main(['demos', '--plan', str(plan), '--out', str(tmp_path / 'd')]) == 2
    assert f'plan {plan}: no task nope' in capsys.readouterr().err
    argv = ['demos', '--plan', str(plan), '--seed-base', '5', '--out', str(tmp_path / 'e')]
    assert main(argv) == 2
    assert 'leave out --seed-base' in capsys.readouterr().err


def test_two_benches_started_in_one_second_get_folders_of_their_own(tmp_path):
    from harness_bringup.run import claim_folder, folder_word

    base = tmp_path / f'20261207-181040-bench-{folder_word("x/../../escape")}'
    first, second = claim_folder(base), claim_folder(base)
    assert first == base and second.name == base.name + '-2' and second.is_dir()
    assert first.parent == tmp_path and first.name.endswith('-bench-x_.._.._escape')


def test_a_ctrl_c_in_a_command_with_nothing_of_its_own_to_say_is_one_line(
    tmp_path, monkeypatch, capsys
):
    """(harness report, plan-collection and outcome-model printed KeyboardInterrupt's
    traceback.)"""
    from harness_bringup import report_command

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_command, '_report', interrupted)
    assert main(['report', str(tmp_path)]) == 130
    assert capsys.readouterr().err.strip() == 'harness report: interrupted'


def test_an_option_given_dashes_for_its_value_is_one_line(capsys):
    """(`--held-out=--` reached the command as an empty list: a TypeError's traceback.)"""
    assert main(['outcome-model', 'train', '.', '--held-out=--', '--out', 'm.json']) == 2
    assert (
        capsys.readouterr().err.strip() == "harness: --held-out=--: '--' is no value for --held-out"
    )


def test_a_served_station_takes_the_next_driver_after_one_that_ended_without_its_outcome(
    tmp_path, monkeypatch
):
    """harness serve, and an attached episode that ends before its last outcome read (an
    error, a Ctrl-C): leaving the graph releases its token, so that the next attached episode
    is not refused with 'an episode is running on this station'."""
    import subprocess
    import sys

    from harness_bringup.domain import claim_domain_id
    from harness_bringup.episode_graph import EpisodeGraph
    from harness_bringup.processes import child_environment

    claim = claim_domain_id()
    claim.release()  # (serve claims its domain itself)
    config = str(ROOT / 'config' / 'harness.yaml')
    serve = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', '--config', config, 'serve'],
        env=child_environment(claim.domain_id),
    )
    try:
        monkeypatch.setenv('ROS_DOMAIN_ID', str(claim.domain_id))
        params = tmp_path / 'params.yaml'
        params.write_text(Path(config).read_text())
        with pytest.raises(KeyboardInterrupt), EpisodeGraph(params, attach=True) as graph:
            graph.reset('lift_cube', 0, 0)
            raise KeyboardInterrupt  # before the outcome was read
        with EpisodeGraph(params, attach=True) as graph:
            graph.reset('lift_cube', 1, 0)  # (refused while the first one held the token)
            assert graph.outcome(end=True).detail
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def test_a_plan_short_of_its_budget_says_why(tmp_path, capsys):
    """--budget 5 from a pool of 2 seeds plans 2 layouts: said, with the option that draws more."""
    bench = tmp_path / 'bench' / 'a'
    bench.mkdir(parents=True)
    summary = {'task': 'lift_cube', 'layout': -1, 'seed': 9000, 'status': 'episode_ended'}
    (bench / 'summary.json').write_text(json.dumps(summary | {'outcome': {'success': True}}))
    (bench / 'kernel.log').write_text('')
    plan = tmp_path / 'plan.json'
    argv = ['plan-collection', str(tmp_path / 'bench'), '--budget', '5', '--out', str(plan)]
    assert main([*argv, '--pool-size', '2']) == 0
    assert len(json.loads(plan.read_text())['layouts']) == 2
    out = capsys.readouterr().out
    assert 'fewer than --budget 5: the --pool-size 2 seeds' in out and 'larger --pool-size' in out
    assert main([*argv, '--pool-size', '5']) == 0  # a pool that holds the budget says nothing
    out = capsys.readouterr().out
    assert 'fewer than' not in out and 'cannot be read' not in out
    # a summary that cannot be read (one being written) is left out, and counted
    (tmp_path / 'bench' / 'b').mkdir()
    (tmp_path / 'bench' / 'b' / 'summary.json').write_text('{"task": "lift')
    assert main([*argv, '--pool-size', '5']) == 0
    said = f'left out 1 summary.json that cannot be read (the first: {tmp_path / "bench"}'
    assert said in capsys.readouterr().out


def test_a_plan_is_never_written_into_what_it_reads_and_names_unknown_tasks_as_the_sources(
    tmp_path, capsys
):
    bench = tmp_path / 'bench' / 'a'
    bench.mkdir(parents=True)
    summary = {'task': 'lift_cube', 'layout': -1, 'seed': 9000, 'status': 'episode_ended'}
    kept = json.dumps(summary | {'outcome': {'success': True}})
    (bench / 'summary.json').write_text(kept)
    (bench / 'kernel.log').write_text('')
    # (it replaced the summary it had just read, exit 0)
    argv = ['plan-collection', str(tmp_path / 'bench'), '--budget', '1']
    assert main([*argv, '--out', str(bench / 'summary.json')]) == 2
    assert 'is inside the source' in capsys.readouterr().err
    assert (bench / 'summary.json').read_text() == kept
    # a task no module of this workspace has, named by a summary, not by --tasks
    (bench / 'summary.json').write_text(json.dumps(summary | {'task': 'no_such_task'}))
    assert main([*argv, '--out', str(tmp_path / 'plan.json')]) == 2
    err = capsys.readouterr().err
    assert "the sources hold episodes of 'no_such_task'" in err and '--tasks' in err, err
