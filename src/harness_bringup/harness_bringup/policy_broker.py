"""The policy broker: the local policy servers of the catalogue, started when they do not
answer and stopped by whoever started them (`harness up` keeps them up; `harness run|program
--policies` start the missing ones on first use and stop them at the end; `harness bench`
starts them once for all its episodes, which then use them and start none: BROKERED).

A local server answers when its /healthz does (openpi servers and ours serve it); an external
one when a websocket client gets its metadata. Each local server is its own process (`harness
policy serve NAME`) in its own process group, so that stopping it stops whatever it started,
and it dies with the broker's process (PR_SET_PDEATHSIG), so a broker killed without its
clean-up leaves no server holding the port.
"""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from harness_policy.catalog import (
    ENDPOINTS_ENV,
    Catalog,
    PolicySpec,
    checkpoint_problem,
    chosen_at_start,
    started_endpoints,
)
from harness_policy.client import PolicyClient, PolicyError
from harness_policy.server import HEALTH_PATH

START_TIMEOUT_S = 120.0  # a server's imports and first answer (the expert loads its models)


class BrokerError(RuntimeError):
    """A local policy server did not start; the message says which and why."""


# Set for the episodes of `harness bench`: the bench's broker owns the servers.
BROKERED = 'HARNESS_POLICIES_BROKERED'
PR_SET_PDEATHSIG = 1


def answers(endpoint: str, timeout_s: float = 2.0) -> bool:
    """Whether a policy server at `endpoint` sends its metadata."""
    try:
        client = PolicyClient(endpoint, timeout_s=timeout_s, open_timeout_s=timeout_s)
    except PolicyError:
        return False
    client.close()
    return True


def identity_problem(spec: PolicySpec, timeout_s: float = 10.0) -> str:
    """What the server answering at spec's endpoint says that is not the catalogue's local
    server ('' when it is): another user's server on the port, or another checkpoint."""
    try:
        client = PolicyClient(spec.endpoint, timeout_s=timeout_s, open_timeout_s=timeout_s)
    except PolicyError as exc:
        return f'no policy server answers at {spec.endpoint}: {exc}'
    metadata = client.metadata if isinstance(client.metadata, dict) else {}
    client.close()
    said = metadata.get('name')
    if said not in (spec.name, spec.serve):
        return (
            f'the server at {spec.endpoint} is not policy {spec.name}: it says it is {said!r} '
            '(another server holds the port: stop it, or give the catalogue entry another port)'
        )
    if spec.serve == 'lerobot':
        from harness_learning.training import weights_sha256

        expected = weights_sha256(Path(spec.checkpoint))
        if metadata.get('checkpoint_sha256') != expected:
            return (
                f'the server at {spec.endpoint} serves policy {spec.name} from other weights than '
                f'{spec.checkpoint} (stop it: a fresh one is started)'
            )
    return ''


def healthy(endpoint: str, timeout_s: float = 2.0) -> bool:
    """Whether the server at `endpoint` answers GET /healthz with 200 (cheaper than a policy
    connection: no policy is made)."""
    host, port = host_port(endpoint)
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        connection.request('GET', HEALTH_PATH)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _death_signal() -> Callable[[], None] | None:
    """What the server's process runs before exec: SIGTERM to it when the broker's process
    dies (Linux prctl). Looked up here, before the fork: the child only calls it."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def host_port(endpoint: str) -> tuple[str, int]:
    url = urlparse(endpoint)
    if url.scheme not in ('ws', 'wss') or not url.hostname or url.port is None:
        raise BrokerError(f'{endpoint!r} is not a ws://host:port address')
    return url.hostname, url.port


def free_port(host: str) -> int:
    """A port nothing listens on now (the server binds it a moment later; a server that took
    it meanwhile is refused by its metadata)."""
    import socket

    with socket.socket(socket.AF_INET) as s:
        try:
            s.bind((host, 0))
        except OSError as exc:  # (a host that does not resolve, or is not this machine's)
            raise BrokerError(f'cannot listen on host {host}: {exc.strerror or exc}') from None
        return s.getsockname()[1]


class PolicyBroker:
    """Starts the catalogue's local servers that do not answer (`ensure`), stops the ones it
    started (`close`). `config` is passed on to `harness policy serve`."""

    def __init__(
        self,
        catalog: Catalog,
        config: Path | None = None,
        log: Callable[[str], None] = print,
        logs: Path | None = None,
    ) -> None:
        self.catalog = catalog
        self.config = config
        self.log = log
        self.logs = logs  # where each started server's output goes (None: inherited)
        self.started: dict[str, subprocess.Popen] = {}
        self.endpoints: dict[str, str] = {}  # chosen at start (catalogue port 0)
        self._environment: str | None = None

    def __enter__(self) -> PolicyBroker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ensure(self, kinds: set[str] | None = None) -> list[str]:
        """Start every local server that does not answer (with `kinds`, only those of policies
        that learned one of them: the tasks about to run); returns the names started here. A
        server whose catalogue port is 0 is started on a free port, published to the processes
        started after this (ENDPOINTS_ENV) until `close`."""
        started = []
        for spec in self.catalog.policies.values():
            if not spec.serve or (kinds is not None and not kinds & set(spec.learned)):
                continue
            if chosen_at_start(spec.endpoint):
                host, _ = host_port(spec.endpoint)
                endpoint = f'ws://{host}:{free_port(host)}'
                spec = replace(spec, endpoint=endpoint)
                self._publish(spec.name, endpoint)
            if problem := checkpoint_problem(self.catalog.path, spec):
                raise BrokerError(problem)  # (also where one answers: its weights are not here)
            if healthy(spec.endpoint):  # one answers already: it must be this one
                problem = identity_problem(spec)
                if problem:
                    raise BrokerError(problem)
                continue
            if spec.serve == 'lerobot':  # a trained policy: torch and LeRobot first (once)
                from harness_policy.learning_env import LearningEnvError, ensure_learning_python

                try:
                    ensure_learning_python(self.log)
                except LearningEnvError as exc:
                    raise BrokerError(f'policy server {spec.name}: {exc}') from None
            if self._start(spec):
                started.append(spec.name)
        return started

    def _start(self, spec: PolicySpec) -> bool:
        """Start `spec`'s server and wait until it answers: True; False when another broker's
        server took the port meanwhile and answers (this one then exits)."""
        host, port = host_port(spec.endpoint)
        command = [sys.executable, '-m', 'harness_bringup.cli']
        if self.config is not None:
            command += ['--config', str(self.config)]
        command += ['policy', 'serve', spec.name, '--host', host, '--port', str(port)]
        if self.catalog.path is not None:
            command += ['--policies', str(self.catalog.path)]
        out = None
        if self.logs is not None:
            self.logs.mkdir(parents=True, exist_ok=True)
            out = open(self.logs / f'policy_{spec.name}.log', 'ab')  # noqa: SIM115 (the child's)
        self.log(f'starting policy server {spec.name} at {spec.endpoint}')
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
            start_new_session=True,
            preexec_fn=_death_signal(),
        )
        if out is not None:
            out.close()
        self.started[spec.name] = process
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self.started.pop(spec.name)
                if healthy(spec.endpoint, timeout_s=1.0):  # another broker's server won the port
                    return False
                raise BrokerError(
                    f'policy server {spec.name} exited with status {process.returncode} before '
                    f'it answered at {spec.endpoint}'
                    + (f' (its log: {self.logs / f"policy_{spec.name}.log"})' if self.logs else '')
                )
            if healthy(spec.endpoint, timeout_s=1.0):
                return True
            time.sleep(0.2)
        self.close()
        raise BrokerError(
            f'policy server {spec.name} did not answer at {spec.endpoint} within '
            f'{START_TIMEOUT_S:g} s'
        )

    def ended(self) -> dict[str, int]:
        """The servers started here that have ended since (forgotten now), with each one's
        exit status: `ensure` starts them again."""
        gone = {n: p.returncode for n, p in self.started.items() if p.poll() is not None}
        for name in gone:
            self.started.pop(name)
        return gone

    def _publish(self, name: str, endpoint: str) -> None:
        if self._environment is None:
            self._environment = os.environ.get(ENDPOINTS_ENV, '')
        self.endpoints[name] = endpoint
        os.environ[ENDPOINTS_ENV] = json.dumps({**started_endpoints(), **self.endpoints})

    def close(self) -> None:
        """Stop the servers this broker started (SIGTERM to each group, then SIGKILL)."""
        if self._environment is not None:  # what it published goes with its servers
            if self._environment:
                os.environ[ENDPOINTS_ENV] = self._environment
            else:
                os.environ.pop(ENDPOINTS_ENV, None)
            self._environment = None
        for name, process in list(self.started.items()):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(5.0)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                except ProcessLookupError:
                    pass
            self.log(f'stopped policy server {name}')
            self.started.pop(name)
