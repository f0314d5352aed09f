"""`harness bench --ray`: a two-episode bench on a local Ray instance, the same tables as a
local bench. Ray is an optional extra (requirements-ray.txt): without it those tests skip; the
archive an episode's folder comes back in is tested without Ray."""

import json
from pathlib import Path

import pytest
from harness_bringup.cli import main


@pytest.fixture
def ray():
    return pytest.importorskip(
        'ray', reason='Ray is an optional extra: pip install -r requirements-ray.txt'
    )


ROOT = Path(__file__).resolve().parents[3]


def test_a_two_episode_bench_runs_as_ray_tasks(ray, tmp_path, capsys):
    # a local instance this process joins; --ray auto finds it already joined
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        code = main(
            ['--config', str(ROOT / 'config' / 'harness.yaml'), 'bench', '--tasks', 'lift_cube']
            + ['--layouts', '2', '--jobs', '2', '--ray', 'auto', '--out', str(tmp_path)]
        )
    finally:
        ray.shutdown()
    assert code == 0
    out = capsys.readouterr().out
    assert 'Ray task' in out and '2/2' in out
    (folder,) = tmp_path.iterdir()
    tables = json.loads((folder / 'bench.json').read_text())
    assert tables['overall']['episodes'] == 2 and tables['overall']['success_rate'] == 1.0
    for layout in (0, 1):
        episode = folder / 'episodes' / f'lift_cube-l{layout}-s0'
        (run,) = [p for p in episode.iterdir() if (p / 'summary.json').is_file()]
        assert (run / 'events.jsonl').is_file() and (episode / 'ray.json').is_file()
    assert (folder / 'report_card.md').is_file()


def test_an_unreachable_cluster_is_one_line_and_exit_2(ray, capsys):
    config = str(ROOT / 'config' / 'harness.yaml')
    code = main(['--config', config, 'bench', '--tasks', 'lift_cube', '--ray', '127.0.0.1:1'])
    assert code == 2
    assert 'no Ray cluster at' in capsys.readouterr().err


def test_a_cluster_started_from_a_venv_only_shell_runs_the_episodes(ray, tmp_path):
    """The user guide's way (`ray start --head` with the venv activated, the workspace not
    sourced) ran no episode: every task failed with "No module named 'harness_bringup'" and the
    bench scored them as failures. The tasks now get the workspace's environment, every node is
    checked first, and a node that cannot import the workspace is one line, exit 2."""
    import os
    import shutil
    import signal
    import socket
    import subprocess
    import sys
    import tempfile
    import time

    from harness_bringup.bench_ray import RayUnavailableError, _check_nodes

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    venv_only = {
        'HOME': os.environ.get('HOME', str(tmp_path)),
        'PATH': f'{Path(sys.executable).parent}:/usr/bin:/bin',
        'RAY_USAGE_STATS_ENABLED': '0',
    }
    ray_cmd = str(Path(sys.executable).parent / 'ray')
    # Ray's Unix sockets live under its temp dir: pytest's is too long a path for them.
    temp = tempfile.mkdtemp(prefix='ray-', dir='/tmp')
    # --block, in a session of its own: this cluster alone is stopped at the end (`ray stop`
    # would stop every Ray instance of the machine's user).
    head = subprocess.Popen(
        [ray_cmd, 'start', '--head', f'--port={port}', '--num-cpus=4', '--block']
        + ['--include-dashboard=false', '--disable-usage-stats', f'--temp-dir={temp}'],
        env=venv_only,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            break
        except OSError:
            assert head.poll() is None and time.monotonic() < deadline, 'ray start failed'
            time.sleep(0.5)
    try:
        config = str(ROOT / 'config' / 'harness.yaml')
        code = main(
            ['--config', config, 'bench', '--tasks', 'lift_cube', '--layouts', '1']
            + ['--ray', f'127.0.0.1:{port}', '--out', str(tmp_path / 'runs')]
        )
        assert code == 0
        (folder,) = (tmp_path / 'runs').iterdir()
        tables = json.loads((folder / 'bench.json').read_text())
        assert tables['overall']['success_rate'] == 1.0 and tables['overall']['not_run'] == 0
        broken = {'env_vars': {'PYTHONPATH': str(tmp_path / 'nowhere')}}
        with pytest.raises(RayUnavailableError, match='cannot run the workspace'):
            _check_nodes(ray, broken)
    finally:
        ray.shutdown()
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_link_out_of_the_folder_is_left_out_and_the_rest_comes_back(tmp_path):
    """A program may make a link in its workspace to a path outside (not read through it):
    unpacked, it lost the episode's summary (its outcome, calls and cost). It is left out, and
    named."""
    import io
    import tarfile

    from harness_bringup.bench_ray import _unpacked

    run = tmp_path / 'node' / 'run'
    (run / 'workspace').mkdir(parents=True)
    (run / 'summary.json').write_text('{"status": "finished"}')
    (run / 'workspace' / 'notes.txt').write_text('kept')
    (run / 'workspace' / 'shadow').symlink_to('/etc/shadow')
    (run / 'workspace' / 'up').symlink_to('../../../..')
    (run / 'workspace' / 'near').symlink_to('notes.txt')
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w:gz') as tar:
        tar.add(run, arcname='run')
    into = tmp_path / 'here'
    into.mkdir()
    left_out = _unpacked(data.getvalue(), into)
    assert sorted(left_out) == ['run/workspace/shadow', 'run/workspace/up']
    assert (into / 'run' / 'summary.json').read_text() == '{"status": "finished"}'
    assert (into / 'run' / 'workspace' / 'near').read_text() == 'kept'  # a link inside stays
    assert not (into / 'run' / 'workspace' / 'shadow').is_symlink()
