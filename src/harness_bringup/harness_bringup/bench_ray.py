"""`harness bench --ray ADDRESS`: each bench episode as a Ray task on a cluster. A task runs
the same `harness run` subprocess as a local bench (its own process and ROS domain on the
node that takes it), then sends back the episode's folder as a tar archive, unpacked under the
bench's folder here, so the tables, report card and pages are made as for a local bench.

Ray is an optional extra (requirements-ray.txt): the default set-up does not install it. Every
node needs this workspace at the same path, set up (the task runs its Python). The tasks get
this process's workspace environment (Ray's runtime_env: PYTHONPATH, AMENT_PREFIX_PATH, ...),
so a cluster started from a shell that only activated the venv runs them too; every node is
asked to import the workspace before any episode is sent, and an episode whose task failed
before it ran is `not_started` (counted as not run, not as a task failure)."""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import tempfile
from pathlib import Path

from harness_recording.run_folder import update_summary

from harness_bringup.bench import EpisodeJob, Runner, not_run, run_episode_process
from harness_bringup.supervisor import Interrupts

CPUS_PER_EPISODE = 2  # the simulator and the kernel process: what a local job takes
# What a task needs of this process's environment to run the workspace's Python and ROS (a
# sourced workspace sets them; a node's Ray worker does not have them otherwise).
WORKSPACE_ENV = (
    'PYTHONPATH',
    'AMENT_PREFIX_PATH',
    'CMAKE_PREFIX_PATH',
    'COLCON_PREFIX_PATH',
    'LD_LIBRARY_PATH',
    'PATH',
    'ROS_DISTRO',
    'ROS_VERSION',
    'ROS_PYTHON_VERSION',
    'RMW_IMPLEMENTATION',
    'HARNESS_CONFIG',
    'MUJOCO_GL',
)
PROBE_S = 120.0  # how long a node may take to start a worker and import the workspace


class RayUnavailableError(RuntimeError):
    """Ray is not installed or the cluster cannot be reached; the message says which."""


def _episode_on_node(job: EpisodeJob) -> tuple[dict, bytes]:
    """On the node: run the episode into a temporary folder; its summary and the folder as a
    gzipped tar."""
    with tempfile.TemporaryDirectory(prefix='harness-ray-') as tmp:
        folder = Path(tmp) / job.episode.name
        summary = run_episode_process(job, folder)
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode='w:gz') as tar:
            tar.add(folder, arcname=job.episode.name)
        run = summary.get('run_folder')
        summary['run_folder'] = str(Path(run).relative_to(Path(tmp))) if run else None
        return summary, data.getvalue()


def _workspace_here() -> str:
    """On a node: where the workspace's harness_bringup is imported from."""
    import harness_bringup

    return str(Path(harness_bringup.__file__).resolve().parent)


def runtime_env(environ: dict | None = None) -> dict:
    """Ray's runtime_env of the tasks: this process's workspace environment."""
    environ = os.environ if environ is None else environ
    return {'env_vars': {k: environ[k] for k in WORKSPACE_ENV if environ.get(k)}}


def _check_nodes(ray, env: dict) -> None:
    """Every alive node imports the workspace with `env`, or RayUnavailableError names the
    node that cannot and why (before any episode is sent: they would all fail there)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0, max_retries=0, runtime_env=env)(_workspace_here)
    nodes = [n for n in ray.nodes() if n.get('Alive')]
    refs = {
        probe.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n['NodeID'], soft=False)
        ).remote(): n
        for n in nodes
    }
    for ref, node in refs.items():
        where = node.get('NodeManagerAddress', node['NodeID'])
        try:
            ray.get(ref, timeout=PROBE_S)
        except Exception as exc:
            cause = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise RayUnavailableError(
                f'Ray node {where} cannot run the workspace ({cause}): it needs this workspace '
                'at the same path, set up'
            ) from None


def _unpacked(archive: bytes, into: Path) -> list[str]:
    """The episode's folder from its node's archive, under `into`: no absolute path and no link
    out of `into` (tarfile's data filter). A link its program made in its workspace to a path
    outside (a sandboxed program may make one, not read through it) is left out and named in
    the list returned: the rest of the folder comes back."""
    left_out: list[str] = []

    def data_or_left_out(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
            left_out.append(member.name)
            return None

    with tarfile.open(fileobj=io.BytesIO(archive), mode='r:gz') as tar:
        tar.extractall(into, filter=data_or_left_out)
    return left_out


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """RayUnavailableError unless HOST:PORT answers (ray.init retries an unreachable address
    for minutes); 'auto' and ray:// addresses are left to Ray."""
    if address == 'auto' or '://' in address:
        return
    host, _, port = address.rpartition(':')
    if not host or not port.isdigit():
        raise RayUnavailableError(f'a Ray address is HOST:PORT or auto, not {address!r}')
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailableError(f'no Ray cluster at {address!r}: {exc}') from None


def ray_runner(address: str) -> Runner:
    """A runner that sends each episode to the Ray cluster at `address` ('auto': the one
    `ray start` runs on this machine, or the one this process already joined)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            'Ray is not installed: pip install -r requirements-ray.txt (an optional extra)'
        ) from None
    if not ray.is_initialized():
        _reachable(address)
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as exc:  # ConnectionError, or Ray's own for a bad address
            raise RayUnavailableError(f'no Ray cluster at {address!r}: {exc}') from None
    env = runtime_env()
    _check_nodes(ray, env)
    remote = ray.remote(num_cpus=CPUS_PER_EPISODE, max_retries=0, runtime_env=env)(_episode_on_node)

    def run(job: EpisodeJob, folder: Path, interrupts: Interrupts) -> dict:
        ref = remote.remote(job)
        cancelled = 0  # the bench's interrupts passed on to the task
        try:
            while not ray.wait([ref], timeout=0.5)[0]:
                if len(interrupts.times()) > cancelled:
                    # The first reaches the episode's supervisor on the node as a SIGINT (the
                    # episode ends interrupted and its folder comes back); a second kills it.
                    cancelled = len(interrupts.times())
                    ray.cancel(ref, force=cancelled > 1)
            summary, archive = ray.get(ref)
        except Exception as exc:  # the task or its node failed before the episode's folder
            # came back: not a task failure of the agent's
            why = str(exc).strip().splitlines()[-1] if str(exc).strip() else ''
            return not_run(
                job, 'not_started', f'the Ray task failed: {type(exc).__name__}: {why}'[:2000]
            )
        try:
            left_out = _unpacked(archive, folder.parent)
        except (tarfile.TarError, OSError) as exc:  # the summary came back: it still counts
            left_out = [f'the folder could not be unpacked: {type(exc).__name__}: {exc}'[:2000]]
        if summary.get('run_folder'):
            summary['run_folder'] = str(folder.parent / summary['run_folder'])
        if left_out:
            summary['left_out_of_the_run_folder'] = left_out
            if summary.get('run_folder'):
                update_summary(
                    Path(summary['run_folder']),
                    lambda s: s.update(left_out_of_the_run_folder=left_out),
                )
        folder.mkdir(parents=True, exist_ok=True)  # (an archive that did not unpack made none)
        (folder / 'ray.json').write_text(json.dumps({'address': address}) + '\n')
        return summary

    return run
