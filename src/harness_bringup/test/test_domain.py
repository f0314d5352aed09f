import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from harness_bringup.domain import (
    FIRST_ID,
    LAST_ID,
    PROFILE_VARIABLE,
    claim_domain_id,
    claim_named_domain_id,
    use_discovery_profile,
)
from harness_bringup.processes import ament_prefix_path, child_environment, numerics_defaults


def test_claims_are_exclusive_and_released(tmp_path):
    claims = [claim_domain_id(tmp_path) for _ in range(5)]
    ids = [c.domain_id for c in claims]
    assert len(set(ids)) == 5
    assert all(FIRST_ID <= i <= LAST_ID for i in ids)
    claims[0].release()
    again = claim_domain_id(tmp_path)
    assert again.domain_id not in ids[1:]
    for c in claims[1:] + [again]:
        c.release()


def test_a_named_domain_is_held_by_one_process_at_a_time(tmp_path):
    """harness serve's ROS_DOMAIN_ID: a second station in it (or a pool claim of it) waits for
    the first to let go, and the refusal names the holder."""
    first = claim_named_domain_id(77, tmp_path)
    held = subprocess.run(
        [
            sys.executable,
            '-c',
            'import sys; from pathlib import Path; '
            'from harness_bringup.domain import claim_named_domain_id as c; '
            'c(77, Path(sys.argv[1]))',
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert held.returncode != 0
    assert f'ROS domain 77 is in use on this machine (by process {os.getpid()})' in held.stderr
    first.release()
    claim_named_domain_id(77, tmp_path).release()


def test_the_lock_folder_is_shared_and_a_planted_link_is_not_followed(tmp_path):
    """Every user's episodes claim from one folder (open to all, sticky); a lock file that is a
    link or a hard link is skipped, and what it points at is neither written nor chmodded."""
    folder = tmp_path / 'domains'
    folder.mkdir(mode=0o755)
    victim = tmp_path / 'victim'
    victim.write_text('precious')
    victim.chmod(0o600)
    for domain_id in range(FIRST_ID, LAST_ID + 1):
        if domain_id % 3 == 0:
            (folder / f'{domain_id}.lock').symlink_to(victim)
        elif domain_id % 3 == 1:
            os.link(victim, folder / f'{domain_id}.lock')
        else:
            os.mkfifo(folder / f'{domain_id}.lock', 0o444)  # read-only: it would block
    with pytest.raises(RuntimeError, match='cannot be opened or made by this user'):
        claim_domain_id(folder)
    assert folder.stat().st_mode & 0o7777 == 0o1777
    assert victim.read_text() == 'precious' and victim.stat().st_mode & 0o777 == 0o600


def _open_to_others(path: str) -> bool:
    """Whether a user that owns nothing here may reach `path` and read or run it."""
    real = Path(os.path.realpath(path))
    folders_open = all(p.stat().st_mode & 0o001 for p in real.parents)
    return folders_open and bool(real.stat().st_mode & 0o005)


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to start a process of another user')
def test_another_user_claims_from_lock_files_made_by_root():
    """Lock files that root made (0644, as before they were opened to all) are locked by
    another user through a read-only descriptor: a claim, not a PermissionError."""
    import harness_bringup

    package = str(Path(harness_bringup.__file__).parent)
    if not (_open_to_others(sys.executable) and _open_to_others(package)):
        pytest.skip('this Python or workspace is not open to other users (a pyenv under /root)')
    base = Path(tempfile.mkdtemp(dir='/tmp'))
    try:
        base.chmod(0o755)
        folder = base / 'domains'
        claims = [claim_domain_id(folder) for _ in range(LAST_ID - FIRST_ID + 1)]
        held = claims[:3]
        for c in claims[3:]:
            c.release()
        for lock in folder.iterdir():
            lock.chmod(0o644)
        folder.chmod(0o755)  # as an earlier harness left it: a user may not add files
        code = (
            'from pathlib import Path; from harness_bringup.domain import claim_domain_id; '
            f'c = claim_domain_id(Path({str(folder)!r})); print(c.domain_id)'
        )
        out = subprocess.run(
            [sys.executable, '-c', code],
            user=65534,
            group=65534,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert int(out.stdout) not in {c.domain_id for c in held}
        for c in held:
            c.release()
    finally:
        shutil.rmtree(base)


def test_all_ids_in_use_is_a_clear_error(tmp_path):
    claims = [claim_domain_id(tmp_path) for _ in range(LAST_ID - FIRST_ID + 1)]
    with pytest.raises(RuntimeError, match='in use'):
        claim_domain_id(tmp_path)
    for c in claims:
        c.release()


def test_the_discovery_profile_is_used_unless_the_user_set_one(monkeypatch):
    monkeypatch.delenv(PROFILE_VARIABLE, raising=False)
    monkeypatch.delenv('FASTDDS_BUILTIN_TRANSPORTS', raising=False)
    use_discovery_profile()
    profile = os.environ[PROFILE_VARIABLE]
    assert profile.endswith('fastdds_profile.xml')
    with open(profile) as f:
        assert 'leaseAnnouncement' in f.read()
    # Shared memory with room for camera views, and UDPv4 for peers on other hosts.
    ns = {'d': 'http://www.eprosima.com'}
    root = ET.parse(profile).getroot()
    kinds = {
        t.findtext('d:type', namespaces=ns): t
        for t in root.iterfind('.//d:transport_descriptor', ns)
    }
    assert set(kinds) == {'SHM', 'UDPv4'}
    # room for a locate()'s three camera views (~3.2 MB) in one segment
    assert int(kinds['SHM'].findtext('d:segment_size', namespaces=ns)) >= 4 << 20
    assert root.findtext('.//d:useBuiltinTransports', namespaces=ns) == 'false'
    # A user's choice of Fast DDS's transports is left to them.
    monkeypatch.delenv(PROFILE_VARIABLE)
    monkeypatch.setenv('FASTDDS_BUILTIN_TRANSPORTS', 'UDPv4')
    use_discovery_profile()
    assert PROFILE_VARIABLE not in os.environ
    monkeypatch.delenv('FASTDDS_BUILTIN_TRANSPORTS')
    monkeypatch.setenv(PROFILE_VARIABLE, '/mine.xml')
    use_discovery_profile()
    assert os.environ[PROFILE_VARIABLE] == '/mine.xml'


def test_the_graphs_children_get_the_domain_one_numerics_thread_and_no_secrets(monkeypatch):
    monkeypatch.setenv(PROFILE_VARIABLE, '/mine.xml')  # restored after the test
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'sk-secret')
    monkeypatch.delenv('OPENBLAS_NUM_THREADS', raising=False)
    env = child_environment(123)
    assert env['ROS_DOMAIN_ID'] == '123'
    assert 'ANTHROPIC_API_KEY' not in env
    assert env['OPENBLAS_NUM_THREADS'] == '1'
    monkeypatch.setenv('OPENBLAS_NUM_THREADS', '4')  # the user's own setting wins
    assert child_environment(123)['OPENBLAS_NUM_THREADS'] == '4'


def test_large_arrays_stay_in_the_heap_unless_the_user_sets_mallocs_thresholds(monkeypatch):
    monkeypatch.setenv(PROFILE_VARIABLE, '/mine.xml')  # child_environment sets it otherwise
    thresholds = [
        'MALLOC_MMAP_THRESHOLD_',
        'MALLOC_TRIM_THRESHOLD_',
        'MALLOC_TOP_PAD_',
        'MALLOC_MMAP_MAX_',
    ]
    for name in [*thresholds, 'GLIBC_TUNABLES']:
        monkeypatch.delenv(name, raising=False)
    env = child_environment(123)
    assert env['MALLOC_MMAP_THRESHOLD_'] == str(32 * 2**20)
    assert env['MALLOC_TRIM_THRESHOLD_'] == str(2**30)
    # malloc settings that are not thresholds leave ours in place
    for other in ({'MALLOC_ARENA_MAX': '2'}, {'GLIBC_TUNABLES': 'glibc.malloc.arena_max=2'}):
        assert numerics_defaults(other)['MALLOC_TRIM_THRESHOLD_'] == str(2**30)
    # One threshold of the user's and the harness sets none (glibc then fixes them all, so
    # theirs beside ours would be a configuration neither chose).
    tunable = 'glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=0'
    for mine in [{name: '0'} for name in thresholds] + [{'GLIBC_TUNABLES': tunable}]:
        assert numerics_defaults(mine) == {'OPENBLAS_NUM_THREADS': '1'}
        for name, value in mine.items():
            monkeypatch.setenv(name, value)
        env = child_environment(123)
        assert all(env.get(k) == mine.get(k) for k in thresholds)
        for name in mine:
            monkeypatch.delenv(name)


def test_a_measurement_starts_itself_again_as_an_episode_process():
    script = (
        'import os, sys; from harness_bringup.processes import as_episode_process; '
        'as_episode_process(); print(sys.argv[1:], os.environ["OPENBLAS_NUM_THREADS"], '
        'os.environ.get("MALLOC_TRIM_THRESHOLD_"))'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(('MALLOC_', 'GLIBC_TUNABLES'))}
    env['OPENBLAS_NUM_THREADS'] = '3'  # the user's own setting is kept
    run = subprocess.run(
        [sys.executable, '-c', script, '--an', 'argument'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split('\n')[0] == f"['--an', 'argument'] 3 {2**30}"


def test_the_venv_of_the_ros_wheels_is_an_ament_prefix(tmp_path):
    """Where ROS comes from PyPI wheels, the venv goes first on AMENT_PREFIX_PATH (the wheels'
    message definitions are in its share/); not twice, not under a ROS installation, and not a
    prefix without an ament index."""
    venv = tmp_path / 'venv'
    (venv / 'share' / 'ament_index').mkdir(parents=True)
    prefix = str(venv)
    assert ament_prefix_path({}, prefix) == prefix
    assert (
        ament_prefix_path({'AMENT_PREFIX_PATH': '/ws/install/a:'}, prefix)
        == f'{prefix}:/ws/install/a'
    )
    assert ament_prefix_path({'AMENT_PREFIX_PATH': f'/x:{prefix}'}, prefix) is None
    assert ament_prefix_path({'ROS_DISTRO': 'kilted'}, prefix) is None
    assert ament_prefix_path({}, str(tmp_path)) is None


def test_harness_runs_an_episode_without_the_venv_on_the_ament_prefix_path(tmp_path):
    """The README's first command from a fresh shell: `./harness` activates the venv and sources
    the workspace, which names only the workspace's packages on AMENT_PREFIX_PATH. The episode
    reads builtin_interfaces' message definitions from the venv all the same (it failed with
    "package 'builtin_interfaces' not found")."""
    if os.environ.get('ROS_DISTRO'):
        pytest.skip('a sourced ROS installation names its own prefixes')
    env = dict(os.environ)
    paths = env.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
    venv = os.path.realpath(sys.prefix)
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(
        p for p in paths if p and os.path.realpath(p) != venv
    )
    # As the `harness` wrapper says when the user's command started and its set-up ended.
    import time

    now = time.time_ns()
    env['HARNESS_INVOKED_NS'], env['HARNESS_SET_UP_NS'] = str(now - 200_000_000), str(now)
    run = subprocess.run(
        [sys.executable, '-m', 'harness_bringup.cli', 'run', 'lift_cube']
        + ['--out', str(tmp_path / 'runs')],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'episode episode_ended' in run.stdout and 'SUCCESS' in run.stdout, run.stdout
    # Every second of the user's wait is in the summary, by phase (the summary's own
    # wall_seconds covered about half of it).
    import json

    (summary,) = (tmp_path / 'runs').glob('*/summary.json')
    s = json.loads(summary.read_text())
    command, inside = s['command_seconds'], s['episode_process_seconds']
    parts = ('set_up_check', 'harness_process_start', 'episode_process', 'after_episode_process')
    assert all(command[p] >= 0 for p in parts) and command['set_up_check'] >= 0.2, command
    assert abs(sum(command[p] for p in parts) - command['total']) < 0.05, command
    assert (
        abs(sum(inside.values()) + command['episode_process_exit'] - command['episode_process'])
        < 0.05
    )
    assert inside['graph_and_episode'] >= s['wall_seconds'] > 0


def test_a_graph_without_a_domain_is_a_start_error_that_says_why(monkeypatch):
    """No domain to claim (every id taken, a lock folder closed to this user): the graph does
    not start, with the claim's words (the run folder then says it), not a traceback."""
    from harness_bringup.station_graph import GraphStartError, StationGraph

    from harness_bringup import station_graph

    def closed():
        raise RuntimeError('no ROS domain id can be claimed: chmod 1777 /tmp/x')

    monkeypatch.setattr(station_graph, 'claim_domain_id', closed)
    with pytest.raises(GraphStartError, match='no ROS domain for the graph: .*chmod 1777'):
        StationGraph().__enter__()
