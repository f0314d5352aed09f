"""The node graph's configuration, typed: config/harness.yaml (ROS 2 parameter-file format,
`<node>: ros__parameters: {...}`) read into one dataclass per node.

The dataclasses hold the defaults (the one place they are written); the YAML overrides them.
Every node declares its parameters from its section (`declare_section`), so the same file
works as `--params-file` for in-process nodes, separate processes and launch files alike.
A key nobody reads is an error, and every error names the file and the key.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from harness_types.whole_file import write_whole

YAML_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)  # the same documents, 8x faster
# Collections nested deeper are no document of ours: the composers recurse (libyaml's in C,
# where ~50000 levels end the process with a segfault; Python's with a RecursionError).
MAX_YAML_DEPTH = 64
# Keys the merges (`<<: [*a, *b]`) of one document may copy, all mappings together: each merge
# of two aliases doubles a mapping (40 such lines in a 1 kB file grew past memory), and many
# merges of one large anchor each copy it (34 kB took 12 s).
MAX_MERGED_KEYS = 10_000


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 2
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 4
_SHOWN.maxstring = _SHOWN.maxother = 80


def shown(value: object) -> str:
    """A value as an error message shows it: its repr, bounded (a few items of two levels;
    a YAML document's aliases can make a 300-byte value expand to tens of megabytes)."""
    return _SHOWN.repr(value)


def check_yaml(text: str, limit: int = MAX_YAML_DEPTH) -> None:
    """yaml.YAMLError when `text` nests collections deeper than `limit`: found on the parser's
    events, which do not recurse, before a composer does."""
    depth = 0
    for event in yaml.parse(text, Loader=YAML_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > limit:
                raise yaml.YAMLError(f'collections nested more than {limit} levels deep')
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


class _OneKeyOnceLoader(YAML_LOADER):
    """YAML_LOADER refusing a mapping that gives a key twice (YAML keeps the last without a
    word: a setting written twice was half ignored). Keys are compared as built (`1` and
    `1.0` are one key, `1` and `'1'` two); a merge (`<<`) may be overridden."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == 'tag:yaml.org,2002:merge':
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    again = key in seen
                    seen.add(key)
                except TypeError:  # (an unhashable key: the constructor says so itself)
                    continue
                if again:
                    raise yaml.constructor.ConstructorError(
                        problem=f'the key {key!r} is given twice in one mapping',
                        problem_mark=key_node.start_mark,
                    )
        return super().construct_mapping(node, deep)

    def flatten_mapping(self, node):
        merges = any(key.tag == 'tag:yaml.org,2002:merge' for key, _ in node.value)
        super().flatten_mapping(node)  # (the merges below first: a bomb stops at its first)
        if merges:
            self._merged = getattr(self, '_merged', 0) + len(node.value)
            if self._merged > MAX_MERGED_KEYS:
                raise yaml.constructor.ConstructorError(
                    problem=f'merges (<<) copy more than {MAX_MERGED_KEYS} keys in this document',
                    problem_mark=node.start_mark,
                )


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong, and where (line and column of the file)."""
    mark = getattr(exc, 'problem_mark', None)
    text = str(getattr(exc, 'problem', None) or exc)
    if mark is not None:
        text += f' at line {mark.line + 1}, column {mark.column + 1}'
    context = getattr(exc, 'context', None)
    if context:
        text += f' ({context})'
    return ' '.join(text.split())


def load_yaml(text: str) -> Any:
    """A YAML document as plain values (YAML_LOADER), its nesting checked first and no key
    given twice in a mapping."""
    check_yaml(text)
    try:
        return yaml.load(text, Loader=_OneKeyOnceLoader)
    except ValueError as exc:  # (an integer past Python's 4300 digits, from the constructor)
        raise yaml.constructor.ConstructorError(problem=' '.join(str(exc).split())[:200]) from None


class ConfigError(ValueError):
    """A config file is missing, malformed or has a wrong value; the message says which."""


# ROS parameters and message integers are 64-bit: the file's integers, seeds and counts.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# The interface ladder (harness_driver.interface): what one model reply may do.
INTERFACES = ('programs', 'skills', 'actions')
# What a run folder keeps (driver.recording): full, everything; lean, for large benches, what
# the tables, the report card and training on states and actions need (a bag without camera
# frames, /tf or the model's images, no report.html, no per-run LeRobot dataset: `harness
# report` and `harness export` make them later from what is kept).
RECORDINGS = ('full', 'lean')


def _at_least(low: float, strict: bool = False, most: float | None = None) -> dict:
    return {'min': low, 'strict': strict, 'max': most}


# The most a process limit may be set to: an RLIMIT in bytes is a 64-bit number (a larger one
# stopped the kernel in setrlimit), and Linux opens at most 2^20 files a process by default.
MAX_LIMIT_MB = 1 << 30
MAX_OPEN_FILES = 1 << 20
# The longest a time setting may be: a week. Timers and socket timeouts take a bounded number
# (ROS's in int64 nanoseconds, a socket's a time_t); 1e10 s passed the check, then failed in
# the middle of an episode.
MAX_SECONDS = 7 * 24 * 3600.0
# A reactive guard's budget a tick: past a minute it bounds nothing a 25 Hz tick could wait for.
MAX_REACTIVE_BUDGET_MS = 60_000.0


@dataclass(frozen=True)
class WorkerConfig:
    """The worker node (`worker`)."""

    backend: str = 'mujoco'  # a module harness_worker.backends.<name>, or a dotted module path
    publish_cameras: bool = True  # camera topics, rendered only while someone subscribes
    camera_every_ticks: int = field(default=5, metadata=_at_least(1))
    # A JPEG frame of each camera on image_raw/compressed every this many ticks, while
    # subscribed (the recorder does: the bag's cameras); 0 = none.
    compressed_every_ticks: int = field(default=25, metadata=_at_least(0))
    # ROS's own: follow /clock (Gazebo, the ros2_control stand-in) instead of the wall clock.
    use_sim_time: bool = False
    # The episode ends at the tick the simulator judges the task done (the bench's rule). An
    # agent operator (harness mcp) says itself when it is done: its station does not end it,
    # which would tell it the ground truth.
    end_on_success: bool = True


@dataclass(frozen=True)
class SkillServerConfig:
    """The skill server node (`skill_server`)."""

    service_timeout_seconds: float = field(
        default=30.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    result_timeout_seconds: int = field(default=10, metadata=_at_least(1, most=MAX_SECONDS))
    # An execution's action feedback (its tick) goes out every this many ticks (5: 5 Hz of
    # simulated time); one publish a tick cost a tenth of a tick's wall time.
    feedback_every_ticks: int = field(default=5, metadata=_at_least(1))


@dataclass(frozen=True)
class KernelConfig:
    """The kernel node (`kernel`) and the sandbox of its program process."""

    cell_timeout_seconds: float = field(
        default=120.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    reactive_budget_ms: float = field(
        default=20.0, metadata=_at_least(0, strict=True, most=MAX_REACTIVE_BUDGET_MS)
    )
    api: str = 'all'  # program API names programs may call (comma-separated) or all
    program_memory_mb: int = field(default=4096, metadata=_at_least(256, most=MAX_LIMIT_MB))
    program_file_size_mb: int = field(default=64, metadata=_at_least(1, most=MAX_LIMIT_MB))
    program_open_files: int = field(default=256, metadata=_at_least(16, most=MAX_OPEN_FILES))
    # What a program may make the trusted side hold (harness_kernel.bounds): its files in all,
    # images shown with show() (each cell, the episode, one image's height x width) and the
    # kernel.log records of one cell's calls. Reaching one is an error to the program.
    program_workspace_mb: int = field(default=256, metadata=_at_least(1))
    program_workspace_files: int = field(default=10000, metadata=_at_least(16))
    shown_images_per_cell: int = field(default=4, metadata=_at_least(0))
    shown_images_per_episode: int = field(default=32, metadata=_at_least(0))
    shown_image_pixels: int = field(default=2048 * 2048, metadata=_at_least(1))
    log_records_per_cell: int = field(default=2000, metadata=_at_least(10))
    # What locate() sees with: a perception backend (a module harness_perception.backends.<name>
    # or a dotted module path): pixels (RGB-D and calibration, what a real camera feeds), oracle
    # (the simulator's segmentation, ground truth) or service (an external detector).
    perception: str = 'pixels'
    perception_service_url: str = ''  # the detector of perception: service (http://host:port)
    perception_service_timeout_seconds: float = field(
        default=10.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    # The policy catalogue (policies.yaml, relative to this file); '' = policies are not
    # enabled. With one, start(strategy, kind) comes first and run_policy reaches its servers.
    policies: str = field(default='', metadata={'path': True})
    # Shadow mode of the world model: before each run_policy, predict it (predict_future);
    # after it, log the prediction beside the measured outcome and score it. Never aborts.
    world_model_shadow: bool = False

    def __post_init__(self) -> None:
        url = self.perception_service_url
        parsed = urlparse(url)
        if self.perception == 'service' and (
            parsed.scheme not in ('http', 'https') or not parsed.hostname
        ):
            raise ConfigError(
                'kernel.perception: service needs kernel.perception_service_url, an '
                f'http(s):// address of the detector, not {url!r}'
            )

    @property
    def api_names(self) -> list[str] | None:
        names = [n.strip() for n in self.api.split(',') if n.strip()]
        return None if names in ([], ['all']) else names


@dataclass(frozen=True)
class DriverConfig:
    """The driver (`driver`): the model loop's budgets, history, prompts and recording."""

    model: str = 'scripted'  # scripted (reference programs, a baseline) or a Claude model name
    # programs (a program per reply), skills (R1: one API call per reply) or actions (R0: one
    # motion per reply)
    interface: str = field(default='programs', metadata={'choices': INTERFACES})
    # With policies, the scripted baseline's strategy: '' = the catalogue's rule (the prompt's),
    # A, B or C forced (the division-of-labour table: bench --strategies)
    strategy: str = field(default='', metadata={'choices': ('', 'A', 'B', 'C')})
    verifier_model: str = ''  # '' = the main model
    # The model's verifier (a program's verify(), a <verify> reply): off, every claim is
    # answered "no verifier in this run" and no model call is made for it.
    verifier_enabled: bool = True
    # One verdict, all its retries included, within this many seconds; then "the verifier could
    # not answer" (a verifier answering 500 or bad JSON was retried until the wall budget).
    verifier_timeout_seconds: float = field(
        default=30.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    max_model_calls: int = field(default=30, metadata=_at_least(1))
    max_wall_seconds: float = field(
        default=1800.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    max_cost_usd: float = field(default=0.0, metadata=_at_least(0))
    keep_images: int = field(default=2, metadata=_at_least(0))
    # Images in one model request at most (the newest kept): a program's show() images are
    # bounded per cell and per episode too (kernel.shown_images_*); 152 reached one request.
    max_request_images: int = field(default=16, metadata=_at_least(1))
    max_history_turns: int = field(default=12, metadata=_at_least(0))
    max_tokens: int = field(default=4096, metadata=_at_least(1))
    model_timeout_seconds: float = field(
        default=120.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )
    cameras: tuple[str, ...] = ('cam_head',)
    prompts: str = field(default='', metadata={'path': True})
    price_table: str = field(default='', metadata={'path': True})
    record_bag: bool = True
    recording: str = field(default='full', metadata={'choices': RECORDINGS})
    # With policies: the model calls left once a task handed to a policy (A, C) has run;
    # then the policy runs to the episode's end and the driver finishes.
    post_policy_calls: int = field(default=4, metadata=_at_least(0))
    # The tiered verifier judges the task's goal after the reset and at the end (beside the
    # ground truth: harness bench's report card); the trial's verdict in the dataset.
    goal_verifier: bool = True
    # At the end also ask the VLM verifier (verifier_model; one model call of the budget): its
    # answer is tier 3, counted only beside a tier-2 verdict.
    goal_verifier_vlm: bool = False
    # The report card (a bench's report_card.json, relative to this file) whose tasks' tier 3
    # was judged: only for those tasks does a tier-3 verdict count ('' = for none).
    tier3_report_card: str = field(default='', metadata={'path': True})
    # Write the run's trials as a LeRobot v3 dataset (<run>/lerobot, demos in lerobot/demos).
    write_dataset: bool = True
    # The outcome model in shadow mode (`harness outcome-model train`; relative to this file):
    # every trial's predicted outcome and surprise beside its verdict; '' = off. It never acts.
    outcome_model: str = field(default='', metadata={'path': True})

    @property
    def verifier(self) -> str:
        return self.verifier_model or self.model


@dataclass(frozen=True)
class OperatorConfig:
    """The agent operator (`operator`, read by `harness mcp`): budgets per failure class that
    the agent cannot raise (an exhausted one opens a ticket), and one action's time bound."""

    reobserve_budget: int = field(default=3, metadata=_at_least(0))
    retry_budget: int = field(default=2, metadata=_at_least(0))
    executor_switch_budget: int = field(default=1, metadata=_at_least(0))
    undo_budget: int = field(default=2, metadata=_at_least(0))
    refill_pause_budget: int = field(default=1, metadata=_at_least(0))
    action_timeout_seconds: float = field(
        default=120.0, metadata=_at_least(0, strict=True, most=MAX_SECONDS)
    )

    def budget_limits(self) -> dict[str, int]:
        return {
            'reobserve': self.reobserve_budget,
            'retry': self.retry_budget,
            'executor_switch': self.executor_switch_budget,
            'undo': self.undo_budget,
            'refill_pause': self.refill_pause_budget,
        }


@dataclass(frozen=True)
class GraphConfig:
    """Every node's section; `path` is the file it came from (None: the defaults)."""

    worker: WorkerConfig = field(default_factory=WorkerConfig)
    skill_server: SkillServerConfig = field(default_factory=SkillServerConfig)
    kernel: KernelConfig = field(default_factory=KernelConfig)
    driver: DriverConfig = field(default_factory=DriverConfig)
    operator: OperatorConfig = field(default_factory=OperatorConfig)
    path: Path | None = None

    def sections(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != 'path'}

    def to_params(self, any_namespace: bool = False) -> dict:
        """The whole configuration as a ROS 2 parameter file's mapping (paths absolute), keyed
        by node name; with `any_namespace`, by `/**/NAME`, which rcl matches to the node in
        whatever namespace it is started (a plain name matches only the root namespace's)."""
        return {
            f'/**/{node}' if any_namespace else node: {'ros__parameters': section_values(section)}
            for node, section in self.sections().items()
        }

    def write(self, path: Path, any_namespace: bool = False) -> Path:
        """Write `to_params(any_namespace)` as YAML (the effective parameters of a run; the file
        a node graph starts from); returns `path`. Whole or not at all (a temporary file
        renamed): a supervisor reads a run's params.yaml while its episode runs."""
        path = Path(path)
        text = '# The effective node-graph parameters of this run (config file plus overrides).\n'
        text += yaml.safe_dump(self.to_params(any_namespace), sort_keys=False)
        write_whole(path, text.encode())
        return path


NODES = {f.name: f.default_factory for f in fields(GraphConfig) if f.name != 'path'}


def section_values(section) -> dict[str, Any]:
    """A section as plain YAML/ROS values (tuples as lists)."""
    return {
        f.name: list(v) if isinstance(v := getattr(section, f.name), tuple) else v
        for f in fields(section)
    }


def _read_yaml(path: Path) -> Any:
    try:
        # libyaml's parser where PyYAML has it: every node of every process reads this file
        doc = load_yaml(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f'config file {path} does not exist') from None
    except IsADirectoryError:
        raise ConfigError(f'config file {path} is a directory') from None
    except OSError as exc:  # (closed to this user, a device that fails, ...)
        raise ConfigError(f'config file {path} cannot be read: {exc.strerror or exc}') from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f'{path}: not UTF-8 text ({exc.reason} at byte {exc.start})') from None
    except yaml.YAMLError as exc:
        raise ConfigError(f'{path}: not valid YAML: {yaml_problem(exc)}') from None
    return {} if doc is None else doc  # (an empty file; `false` or `0` is no mapping)


def _typed(where: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok and INT64_MIN <= value <= INT64_MAX
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        try:
            ok = ok and math.isfinite(value)
        except OverflowError:  # an integer beyond any float
            ok = False
        value = float(value) if ok else value
    elif isinstance(default, tuple):
        ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        value = tuple(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        kind = {
            tuple: 'a list of strings',
            bool: 'true or false',
            str: 'a string',
            int: 'a 64-bit int',
        }.get(type(default), f'a finite {type(default).__name__}')
        hint = ''
        if isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
            # YAML 1.1 (PyYAML) reads a number with an exponent as text unless it has a dot
            # and a signed exponent (1.0e+3); an integer takes its digits
            hint = (
                ' (YAML reads it as text: write it with a dot and a signed exponent, e.g. 1.0e+3)'
                if isinstance(default, float)
                else ' (YAML reads it as text: write its digits, e.g. 1000)'
            )
        raise ConfigError(f'{where} must be {kind}, not {shown(value)}{hint}')
    return value


_EXPONENT = re.compile(r'[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+')


def read_section(cls, values: dict, where: str, base: Path | None = None):
    """An instance of section `cls` from `values`; ConfigError names `where`.key."""
    known = {f.name: f for f in fields(cls)}
    out = {}
    for name, value in values.items():
        if name not in known:  # also a key that is not a string (`1:`)
            raise ConfigError(
                f'{where} has no parameter {name!r}; it has: {", ".join(known) or "none"}'
            )
        f = known[name]
        value = _typed(f'{where}.{name}', value, _default_of(f))
        meta = f.metadata
        if 'min' in meta:
            low, strict = meta['min'], meta.get('strict', False)
            if value < low or (strict and value == low):
                relation = '>' if strict else '>='
                raise ConfigError(f'{where}.{name} must be {relation} {low}, not {value}')
        if meta.get('max') is not None and value > meta['max']:
            raise ConfigError(f'{where}.{name} must be <= {meta["max"]}, not {value}')
        if 'choices' in meta and value not in meta['choices']:
            raise ConfigError(
                f'{where}.{name} must be one of {", ".join(meta["choices"])}, not {shown(value)}'
            )
        if meta.get('path') and value and base is not None:
            value = str((base / value).resolve())
        out[name] = value
    try:
        return cls(**out)
    except ConfigError as exc:  # a rule between parameters: said with the file and section
        raise ConfigError(f'{where}: {exc}') from None


def _default_of(f):
    if f.default is not MISSING:
        return f.default
    return f.default_factory()


# Where the configuration is read from when no file is named: an environment variable (the
# workspace's ./harness sets it), then the conventional place in the current folder.
CONFIG_VARIABLE = 'HARNESS_CONFIG'
CONFIG_IN_WORKSPACE = Path('config') / 'harness.yaml'


def not_a_file(path: Path) -> str:
    """Why `path`, asked for as a file to read, is not one (for a message that names it)."""
    if path.is_dir():
        return 'is a folder, not a file'
    if path.exists():  # a device, a pipe, a socket: nothing read whole from a file
        return 'is not a regular file'
    return 'does not exist'


def config_file(named: str | Path | None = None) -> Path | None:
    """The configuration file to read: `named` (a command line's --config), else
    $HARNESS_CONFIG, else ./config/harness.yaml, else the workspace's config/harness.yaml (the
    folder above these installed sources: colcon's symlink install and editable installs point
    back into the workspace). None when there is none: every default then applies, and the
    driver has no prompts. FileNotFoundError when a named or $HARNESS_CONFIG file is missing."""
    if named is not None and not str(named).strip():
        raise FileNotFoundError('--config names no file')
    given = named or os.environ.get(CONFIG_VARIABLE)
    if given:
        path = Path(given)
        if not path.is_file():
            origin = '' if named else f' (${CONFIG_VARIABLE})'
            raise FileNotFoundError(f'config file {path}{origin} {not_a_file(path)}')
        return path
    if CONFIG_IN_WORKSPACE.is_file():
        return CONFIG_IN_WORKSPACE
    for folder in Path(__file__).resolve().parents:
        if (folder / CONFIG_IN_WORKSPACE).is_file():
            return folder / CONFIG_IN_WORKSPACE
    return None


def load_config(path: Path | str | None) -> GraphConfig:
    """The typed configuration of `path` (every default when None). Relative paths in it (the
    driver's prompts and price table) are resolved against the file's folder."""
    if path is None:
        return GraphConfig()
    path = Path(path)
    doc = _read_yaml(path)
    if not isinstance(doc, dict):
        raise ConfigError(f'{path}: expected a mapping of node names')
    unknown = sorted(map(str, set(doc) - set(NODES)))
    if unknown:
        raise ConfigError(
            f'{path}: no node of the graph is called {", ".join(map(repr, unknown))}; '
            f'nodes: {", ".join(NODES)}'
        )
    sections = {}
    for node, make in NODES.items():
        section = doc.get(node, {}) or {}
        params = section.get('ros__parameters', {}) if isinstance(section, dict) else None
        if not isinstance(params, dict):
            raise ConfigError(f'{path}: {node}: needs a ros__parameters mapping')
        beside = sorted(map(str, set(section) - {'ros__parameters'}))
        if beside:  # a setting there would be left at its default without a word
            raise ConfigError(
                f'{path}: {node}: {", ".join(map(repr, beside))} beside ros__parameters: a '
                f"node's settings go under {node}: ros__parameters:"
            )
        sections[node] = read_section(type(make()), params, f'{path}: {node}', path.parent)
    return GraphConfig(**sections, path=path)


def with_overrides(config: GraphConfig, node: str, **overrides: Any) -> GraphConfig:
    """The configuration with fields of one node's section replaced (command-line flags),
    checked as the file's values are; None keeps the value."""
    section = getattr(config, node)
    given = {k: v for k, v in overrides.items() if v is not None}
    current = section_values(section)
    checked = read_section(type(section), {**current, **given}, f'--{node} override')
    return replace(config, **{node: checked})


def declare_section(node, cls, frozen: bool = True):
    """Declare `cls`'s fields as parameters of the ROS `node` (defaults from `cls`) and return
    the section the node was started with (its --params-file, launch parameters or the
    defaults). `frozen`: the node reads them once, so a later `ros2 param set` of one is
    refused, saying so (accepted, the parameter would misreport the node). Duck-typed on the
    node: nothing here imports rclpy."""
    values = {}
    for f in fields(cls):
        default = _default_of(f)
        declared = list(default) if isinstance(default, tuple) else default
        if node.has_parameter(f.name):  # ROS's own (use_sim_time) is declared already
            values[f.name] = node.get_parameter(f.name).value
        else:
            values[f.name] = node.declare_parameter(f.name, declared).value
        if values[f.name] is None and isinstance(default, tuple):
            values[f.name] = []  # an empty list in the file: ROS gives it no type, nor a value
    section = read_section(cls, values, f'node {node.get_name()} parameters')
    if frozen and hasattr(node, 'add_on_set_parameters_callback'):
        node.add_on_set_parameters_callback(_refuse_changes_of(node.get_name(), set(values)))
    return section


def _refuse_changes_of(node_name: str, names: set[str]):
    """An rclpy on-set-parameters callback that refuses a change of any of `names`."""
    from rcl_interfaces.msg import SetParametersResult

    def refuse(parameters) -> SetParametersResult:
        held = sorted(p.name for p in parameters if p.name in names)
        if not held:
            return SetParametersResult(successful=True)
        return SetParametersResult(
            successful=False,
            reason=(
                f'{node_name} reads {", ".join(held)} once, at start: restart it with the new '
                'value (the parameter file, or -p)'
            ),
        )

    return refuse
