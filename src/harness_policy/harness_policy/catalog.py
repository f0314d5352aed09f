"""The policy catalogue (config/policies.yaml): each policy's name, endpoint, action space and
rate, the observation it is sent, the task kinds it learned and which of them it usually
finishes. `list_policies()` returns the descriptions; `start(strategy, kind)` checks kinds
against it; the broker starts the local servers it names; the scripted baseline chooses its
strategy from it by the rule the prompt gives the model (`strategy_for`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

import yaml
from arx_x5_description.embodiment import Embodiment, load_embodiment
from harness_types.config import ConfigError, load_yaml, shown, yaml_problem
from harness_types.whole_file import read_text

from harness_policy.observation import (
    PROMPT,
    STATE,
    TIME,
    depth_key,
    extrinsics_key,
    image_key,
    intrinsics_key,
)
from harness_policy.stream import hold_ticks

# What a policy's `actions` rows are: 14 absolute targets in the command layout.
ACTION_SPACES = ('joint_position',)
STRATEGIES = {
    'A': 'the policy runs the whole task from the untouched start pose; the model supervises',
    'B': 'programs only',
    'C': 'the policy first, then programs finish what it leaves',
}


@dataclass(frozen=True)
class PolicySpec:
    """One policy of the catalogue."""

    name: str
    description: str
    endpoint: str  # ws://host:port
    serve: str = ''  # a local server `harness policy serve` can start ('' = external)
    checkpoint: str = ''  # serve: lerobot: the `harness policy train` folder it serves
    action_space: str = 'joint_position'
    action_hz: float = 25.0
    cameras: tuple[str, ...] = ()  # the views it is sent (the catalogue's default: every camera)
    depth: bool = True
    learned: tuple[str, ...] = ()  # task kinds it learned
    finishes: tuple[str, ...] = ()  # of those, the ones it usually finishes
    # The instructions it learned, where it learned only some of its kinds' tasks (a policy
    # trained on one task's demonstrations); empty: any instruction of its kinds.
    instructions: tuple[str, ...] = ()
    # (harness key, server key): the names a stock server (openpi's examples) expects for the
    # observation's keys, e.g. observation/images/cam_head -> observation/image
    observation_keys: tuple[tuple[str, str], ...] = ()
    stall_seconds: float = 5.0  # arms still this long (simulated), once they moved: it is over
    timeout_seconds: float = 30.0  # one chunk request
    # Which weights this entry serves: 1 as written by hand, +1 at each adoption by the gate
    # (`harness policy adopt`; the adoption log beside the catalogue says what was measured).
    version: int = 1

    def text(self) -> str:
        """What list_policies() says of it."""
        rest = [k for k in self.learned if k not in self.finishes]
        return (
            f'{self.name} (version {self.version}): {self.description.strip()} '
            f'Learned: {", ".join(self.learned) or "-"}; '
            f'usually finishes: {", ".join(self.finishes) or "-"}'
            + (f'; learned but does not usually finish: {", ".join(rest)}' if rest else '')
            + (
                '; only the instructions: ' + ', '.join(f'"{i}"' for i in self.instructions)
                if self.instructions
                else ''
            )
            + f'. Actions: {self.action_space} at {self.action_hz:g} Hz; sees '
            f'{", ".join(self.cameras)}{" with depth" if self.depth else ""}.'
        )


@dataclass(frozen=True)
class Catalog:
    policies: dict[str, PolicySpec]
    path: Path | None = None

    def get(self, name: str) -> PolicySpec:
        if name not in self.policies:
            known = ', '.join(self.policies) or 'none'
            raise ValueError(f'no policy is called {name!r}; policies: {known}')
        return self.policies[name]

    def for_kind(self, kind: str, instruction: str = '') -> PolicySpec | None:
        """The policy that learned `kind` (one that usually finishes it first); with an
        `instruction`, only one that learned it (a policy of listed instructions learned no
        other)."""
        learned = [
            p
            for p in self.policies.values()
            if kind in p.learned
            and not (instruction and p.instructions and instruction not in p.instructions)
        ]
        learned.sort(key=lambda p: kind not in p.finishes)
        return learned[0] if learned else None

    def strategy_for(self, kind: str, instruction: str = '') -> str:
        """The division-of-labour rule: A for a kind a policy learned and usually finishes,
        C for one it learned otherwise, B for the rest (identification tasks)."""
        policy = self.for_kind(kind, instruction)
        if policy is None:
            return 'B'
        return 'A' if kind in policy.finishes else 'C'

    def kinds(self) -> list[str]:
        return sorted({k for p in self.policies.values() for k in p.learned})

    def text(self) -> str:
        return '\n'.join(p.text() for p in self.policies.values()) or 'no policies are configured'


_FIELDS = {
    'description': str,
    'endpoint': str,
    'serve': str,
    'checkpoint': str,
    'action_space': str,
    'action_hz': float,
    'cameras': list,
    'depth': bool,
    'learned': list,
    'finishes': list,
    'instructions': list,
    'observation_keys': dict,
    'stall_seconds': float,
    'timeout_seconds': float,
    'version': int,
}


def _spec(name: str, entry: object, where: str, emb: Embodiment) -> PolicySpec:
    if not isinstance(entry, dict):
        raise ConfigError(f'{where}: policy {name!r} must be a mapping')
    unknown = sorted(map(str, set(entry) - set(_FIELDS)))
    if unknown:
        raise ConfigError(
            f'{where}: policy {name!r} has no field {", ".join(map(repr, unknown))}; '
            f'fields: {", ".join(_FIELDS)}'
        )
    for key in ('description', 'endpoint'):
        if not entry.get(key):
            raise ConfigError(f'{where}: policy {name!r} needs {key!r}')
    values: dict = {}
    for key, kind in _FIELDS.items():
        if key not in entry:
            continue
        value = entry[key]
        ok = (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            if kind is float
            else isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if kind is int
            else isinstance(value, list) and all(isinstance(v, str) for v in value)
            if kind is list
            else isinstance(value, dict)
            and all(isinstance(k, str) and isinstance(v, str) and v for k, v in value.items())
            and len(set(value.values())) == len(value)
            if kind is dict
            else isinstance(value, kind)
        )
        if not ok:
            want = {
                float: 'a finite number',
                list: 'a list of strings',
                bool: 'true or false',
                dict: "a mapping of the harness's keys to distinct server keys",
                int: 'a whole number from 1',
            }
            raise ConfigError(
                f'{where}: {name}.{key} must be {want.get(kind, "a string")}, not {shown(value)}'
            )
        values[key] = (
            tuple(value)
            if kind is list
            else tuple(value.items())
            if kind is dict
            else float(value)
            if kind is float
            else value
        )
    values.setdefault('cameras', tuple(emb.cameras))
    spec = PolicySpec(name, **values)
    if not _ws_address(spec.endpoint):
        raise ConfigError(
            f'{where}: {name}.endpoint must be a ws:// address with a host (a name or an IPv4 '
            f'address) and a port from 0 to 65535, not {shown(spec.endpoint)}'
        )
    if spec.action_space not in ACTION_SPACES:
        raise ConfigError(
            f'{where}: {name}.action_space must be one of {", ".join(ACTION_SPACES)}, '
            f'not {spec.action_space!r}'
        )
    if spec.serve == 'lerobot' and not spec.checkpoint:
        raise ConfigError(
            f'{where}: {name}: a trained policy (serve: lerobot) needs `checkpoint`: the folder '
            '`harness policy train` wrote'
        )
    if '\0' in spec.checkpoint:  # (Path.resolve raised on it, a traceback)
        raise ConfigError(f'{where}: {name}.checkpoint holds a NUL byte: no path does')
    if spec.checkpoint and not Path(spec.checkpoint).is_absolute():
        # relative to the catalogue file, as its user wrote it
        spec = replace(spec, checkpoint=str((Path(where).parent / spec.checkpoint).resolve()))
    if chosen_at_start(spec.endpoint) and not spec.serve:
        raise ConfigError(
            f'{where}: {name}.endpoint: port 0 (chosen at start) is for a local server (serve); '
            'an external server needs its port'
        )
    if spec.serve and not spec.endpoint.startswith('ws://'):
        raise ConfigError(
            f'{where}: {name}: a local server (serve) is reached at ws://, not wss://'
        )
    for key in ('action_hz', 'stall_seconds', 'timeout_seconds'):
        if getattr(spec, key) <= 0:
            raise ConfigError(f'{where}: {name}.{key} must be > 0, not {getattr(spec, key)}')
    try:
        hold_ticks(spec.action_hz, emb.rates.control_hz, f'{name}.action_hz: policy {name}')
    except ValueError as exc:
        raise ConfigError(f'{where}: {exc}') from None
    unknown_cams = [c for c in spec.cameras if c not in emb.cameras]
    if unknown_cams:
        raise ConfigError(
            f'{where}: {name}.cameras: no camera {", ".join(unknown_cams)}; cameras: '
            f'{", ".join(emb.cameras)}'
        )
    stray = [k for k in spec.finishes if k not in spec.learned]
    if stray:
        raise ConfigError(f'{where}: {name}.finishes names kinds it did not learn: {stray}')
    from harness_bench.tasks import TASKS

    kinds = sorted({task.kind for task in TASKS.values()})
    unknown_kinds = [k for k in spec.learned if k not in kinds]
    if unknown_kinds:
        raise ConfigError(
            f'{where}: {name}.learned: no task kind {", ".join(map(repr, unknown_kinds))}; '
            f'kinds: {", ".join(kinds)}'
        )
    renames = dict(spec.observation_keys)
    kept = [k for k in sent_keys(spec.cameras) if k not in renames]
    clash = sorted(v for v in renames.values() if v in kept)
    if clash:
        raise ConfigError(
            f'{where}: {name}.observation_keys renames onto {", ".join(clash)}, which the '
            'harness sends under that name itself: one would overwrite the other'
        )
    return spec


def checkpoint_problem(catalog_path: Path | None, spec: PolicySpec) -> str:
    """Why a trained policy's server cannot start from its `checkpoint` ('' when it can),
    naming the catalogue and the key: asked before its server starts (and before the learning
    extra is checked for it), not when the catalogue loads (an entry that no command of the
    moment serves may name weights that are not here)."""
    if spec.serve != 'lerobot' or Path(spec.checkpoint).is_dir():
        return ''
    where = catalog_path or 'the policy catalogue'
    return (
        f'{where}: {spec.name}.checkpoint: {spec.checkpoint} is not a folder (the one `harness '
        'policy train` wrote)'
    )


def sent_keys(cameras: tuple[str, ...]) -> list[str]:
    """Every key an observation of a policy sent `cameras` may hold (observation.py)."""
    per_camera = (image_key, depth_key, intrinsics_key, extrinsics_key)
    return [STATE, TIME, PROMPT, *(key(c) for c in cameras for key in per_camera)]


# The endpoints the broker chose at start for local servers whose catalogue port is 0 (JSON
# {name: ws://host:port}), for the processes it starts the episodes in (they inherit it).
ENDPOINTS_ENV = 'HARNESS_POLICY_ENDPOINTS'


# A policy's name: the broker passes it to `harness policy serve NAME` and names its log after it
POLICY_NAME = re.compile(r'[A-Za-z0-9_.][A-Za-z0-9_.-]*')


def chosen_at_start(endpoint: str) -> bool:
    """A local server's endpoint whose port (0) the broker chooses when it starts it."""
    return endpoint.rstrip('/').endswith(':0')


def started_endpoints() -> dict[str, str]:
    import json
    import os

    try:
        value = json.loads(os.environ.get(ENDPOINTS_ENV) or '{}')
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _ws_address(endpoint: str) -> bool:
    """Whether `endpoint` is a ws:// or wss:// URL a client can connect to: a host (a name or
    an IPv4 address: the servers here listen on IPv4), and a port in range where it names
    one; no space or control character anywhere (an HTTP request cannot carry one)."""
    if any(c.isspace() or not c.isprintable() for c in endpoint):
        return False
    try:
        url = urlparse(endpoint)
        url.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError:  # an unclosed [ of an IPv6 host, a port that is not a number
        return False
    return url.scheme in ('ws', 'wss') and bool(url.hostname) and ':' not in url.hostname


def load_catalog(path: Path | str, emb: Embodiment | None = None) -> Catalog:
    """The catalogue of `path`, checked against the robot (`emb`, default: the station's
    embodiment: its cameras and control rate); ConfigError names the file and the field."""
    emb = emb if emb is not None else load_embodiment()
    path = Path(path)
    try:
        doc = load_yaml(read_text(path))
    except FileNotFoundError:
        raise ConfigError(f'policy catalogue {path} does not exist') from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f'{path}: not UTF-8 text ({exc.reason} at byte {exc.start})') from None
    except IsADirectoryError:
        raise ConfigError(f'{path}: not a YAML file: it is a folder') from None
    except OSError as exc:  # (a FIFO, a device, past the bound, closed to this user)
        raise ConfigError(f'policy catalogue {path} cannot be read: {exc.strerror}') from None
    except yaml.YAMLError as exc:
        raise ConfigError(f'{path}: not a YAML file: {yaml_problem(exc)}') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('policies'), dict):
        raise ConfigError(f'{path}: expected a mapping `policies: {{name: {{...}}}}`')
    for n in doc['policies']:
        if not isinstance(n, str) or not POLICY_NAME.fullmatch(n):
            # (a name the broker passes on a command line, and names a log file after)
            raise ConfigError(
                f'{path}: the policy name {shown(n)} must be letters, digits, _ . and -, not '
                'beginning with - (and a string: 1 and "1" were one name)'
            )
    specs = {n: _spec(n, e, str(path), emb) for n, e in doc['policies'].items()}
    serving: dict[str, str] = {}  # a fixed local endpoint -> the entry served there
    for name, spec in specs.items():
        if spec.serve and not chosen_at_start(spec.endpoint):
            at = spec.endpoint.rstrip('/')
            if at in serving:  # (`harness up` would find the port taken by the first)
                raise ConfigError(
                    f'{path}: {name}.endpoint: {serving[at]} is served at {at} too; two local '
                    'servers cannot share a port (port 0: chosen at start)'
                )
            serving[at] = name
    started = started_endpoints()
    for name, spec in specs.items():
        if chosen_at_start(spec.endpoint) and name in started:
            specs[name] = replace(spec, endpoint=started[name])
    return Catalog(specs, path)
