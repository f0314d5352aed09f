"""`harness bench --ray ADDRESS`: each bench episode as a Ray task on a cluster. A task runs
the same `harness run` subprocess as a local bench (its own process and ROS domain on the
node that takes it), then sends back the episode's folder as a tar archive, unpacked under the
bench's folder here, so the tables, report card and pages are made as for a local bench.

Ray is an optional extra (requirements-ray.txt): the default set-up does not install it. Every
node needs this workspace at the same path, set up (the task runs its Python)."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import tempfile
from pathlib import Path

from harness_bringup.bench import EpisodeJob, Runner, not_run, run_episode_process
from harness_bringup.supervisor import Interrupts

CPUS_PER_EPISODE = 2  # the simulator and the kernel process: what a local job takes


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


def _unpacked(archive: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive), mode='r:gz') as tar:
        tar.extractall(into, filter='data')  # no absolute paths or links out of `into`


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
    remote = ray.remote(num_cpus=CPUS_PER_EPISODE, max_retries=0)(_episode_on_node)

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
        except Exception as exc:  # the task or its node died: the episode is an error
            return not_run(job, 'error', f'the Ray task failed: {type(exc).__name__}: {exc}')
        _unpacked(archive, folder.parent)
        if summary.get('run_folder'):
            summary['run_folder'] = str(folder.parent / summary['run_folder'])
        (folder / 'ray.json').write_text(json.dumps({'address': address}) + '\n')
        return summary

    return run
