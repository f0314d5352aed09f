"""One episode from the command line's point of view: check the inputs, write the run's
parameters, start the graph, run the model loop, leave the run folder. Shared by
`harness run`, `harness bench` and perf/."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arx_x5_description.embodiment import load_embodiment
from harness_bench.layout import SAMPLED, layout_name
from harness_bench.randomization import axes_name
from harness_bench.reference import reference_cells
from harness_bench.tasks import TASKS
from harness_driver.actions_baseline import SourceRunError, check_source
from harness_driver.baseline import strategy_cells
from harness_driver.budgets import Budgets
from harness_driver.episode import Episode
from harness_driver.episode_types import EpisodeResult, EpisodeSpec, Prompts
from harness_driver.models import SCRIPTED, ModelClient, ModelError, make_model
from harness_driver.prices import load_prices
from harness_driver.prompts import PromptError, system_prompt, verifier_prompt
from harness_kernel.api_table import API_NAMES, enabled_names
from harness_policy.catalog import Catalog, load_catalog
from harness_recording.report_card import tier3_tasks
from harness_recording.run_folder import BAG, RunFolder, update_summary
from harness_types.config import ConfigError, GraphConfig, not_a_file
from harness_types.plugins import plugin_problem
from harness_types.process import handle_as_before, interrupts_held, process_age_s

if TYPE_CHECKING:
    from harness_perception.evidence import EvidenceTaker
    from harness_recording.bag import OpenedBag

    from harness_bringup.warm_station import WarmGraph


class UsageError(ValueError):
    """A bad task, layout, model or config: reported in one line, exit 2."""


@dataclass
class Prepared:
    config: GraphConfig
    spec: EpisodeSpec
    model: ModelClient
    verifier: ModelClient | None
    budgets: Budgets
    prompts: Prompts
    actions_from: Path | None = None  # the programs-rung run the scripted actions rung replays


def check_task(task: str, layout: int) -> None:
    """UsageError unless `task` exists and has `layout`."""
    if task not in TASKS:
        raise UsageError(f'unknown task {task!r}; known tasks: {", ".join(sorted(TASKS))}')
    if layout == SAMPLED:
        if not TASKS[task].regions:
            raise UsageError(f'{task} declares no regions: it has no random layouts')
    elif not 0 <= layout < TASKS[task].layouts:
        raise UsageError(
            f'{task} has layouts 0..{TASKS[task].layouts - 1} and random, not {layout}'
        )


def replays_source(model: str, interface: str) -> bool:
    """The scripted actions rung: it replays a programs-rung run of its episode (same task,
    layout and seed; harness_driver.actions_baseline), which its caller runs first unless it
    is named (--actions-from)."""
    return model == SCRIPTED and interface == 'actions'


def doc_values(config: GraphConfig) -> dict:
    """The configured values the API's docstrings and prompts name (what the model reads)."""
    from harness_bench.randomization import TABLE_OFFSET_M

    embodiment = load_embodiment()
    return {
        'reactive_budget_ms': config.kernel.reactive_budget_ms,
        'control_hz': embodiment.rates.control_hz,
        'max_contact_force_n': embodiment.shield.max_contact_force_n,
        'post_policy_calls': config.driver.post_policy_calls,
        'table_top_z': embodiment.table_top_z,
        'table_offset_cm': round(TABLE_OFFSET_M * 100, 1),
    }


def policy_catalog(config: GraphConfig) -> Catalog | None:
    """The configured policy catalogue (None: policies are not enabled); UsageError when it
    cannot be read."""
    if not config.kernel.policies:
        return None
    try:
        return load_catalog(config.kernel.policies)
    except ConfigError as exc:
        raise UsageError(f'kernel.policies: {exc}') from None


# The worker backend that drives a ros2_control controller: one started by a launch file in the
# domain the station joins, never in a command's own private domain.
ATTACHED_ONLY_BACKENDS = ('ros2_control',)


def check_station_settings(config: GraphConfig, own_station: bool = False) -> None:
    """What the file's types cannot say and the graph would find only once it runs: the
    worker's and perception's backends exist, the driver's cameras are the station's, the
    program API's names are the API's, the driver's model files exist. `own_station`: the
    command starts its own station in a private ROS domain (not --attach, not `harness
    serve`), where no ros2_control controller can be."""
    from harness_worker.station import BACKENDS as WORKER_BACKENDS
    from harness_worker.station import FACTORY as WORKER_FACTORY

    from harness_perception import BACKENDS as PERCEPTION_BACKENDS
    from harness_perception import FACTORY as PERCEPTION_FACTORY

    where = f'{config.path}: ' if config.path else ''
    for key, folder, name, factory in (
        ('worker.backend', WORKER_BACKENDS, config.worker.backend, WORKER_FACTORY),
        ('kernel.perception', PERCEPTION_BACKENDS, config.kernel.perception, PERCEPTION_FACTORY),
    ):
        if problem := plugin_problem(folder, name, factory):
            raise UsageError(f'{where}{key}: {problem}')
    if own_station and config.worker.backend in ATTACHED_ONLY_BACKENDS:
        raise UsageError(
            f'{where}worker.backend: {config.worker.backend} drives the controllers a launch file '
            "starts (the real arm, Gazebo, mock hardware), which this command's own graph, in a "
            'private ROS domain, cannot reach: launch the station (ros2 launch harness_bringup '
            '...) and run with --attach in its ROS_DOMAIN_ID, or use worker.backend: mujoco'
        )
    unknown = [n for n in config.kernel.api_names or () if n not in API_NAMES]
    if unknown:
        raise UsageError(
            f'{where}kernel.api: no API name {", ".join(map(repr, unknown))}; the API has: '
            f'{", ".join(API_NAMES)} (or all)'
        )
    for key, named in (
        ('driver.outcome_model', config.driver.outcome_model),
        ('driver.tier3_report_card', config.driver.tier3_report_card),
    ):
        if named and not Path(named).is_file():
            raise UsageError(f'{where}{key}: {named} {not_a_file(Path(named))}')
    cameras = load_embodiment().cameras
    unknown = [c for c in config.driver.cameras if c not in cameras]
    if unknown:
        raise UsageError(
            f'{where}driver.cameras: no camera {", ".join(map(repr, unknown))}; the station '
            f'has {", ".join(cameras)}'
        )


def prepare(
    config: GraphConfig,
    task: str,
    layout: int,
    seed: int,
    log: Callable[[str], None] = print,
    actions_from: Path | None = None,
    randomize: tuple[str, ...] = (),
    attached: bool = False,
) -> Prepared:
    """Everything that can be checked before the graph starts; UsageError says what is wrong.
    `actions_from`: the programs-rung run of this episode the scripted actions rung replays;
    `attached`: the episode joins a station running elsewhere (--attach)."""
    check_task(task, layout)
    driver = config.driver
    if actions_from is not None:
        if not replays_source(driver.model, driver.interface):
            raise UsageError(
                f'--actions-from is replayed by --model {SCRIPTED} --interface actions, not by '
                f'--model {driver.model} --interface {driver.interface}'
            )
        try:
            check_source(actions_from, task, layout, seed, randomize)
        except SourceRunError as exc:
            raise UsageError(f'--actions-from: {exc}') from None
    check_station_settings(config, own_station=not attached)
    t = TASKS[task]()
    catalog = policy_catalog(config)
    names = enabled_names(config.kernel.api_names, catalog is not None)
    try:
        prices = load_prices(driver.price_table)
        budgets = Budgets(driver, prices)
        if not driver.prompts:
            if config.path is None:
                raise ConfigError(
                    'no configuration file was found (it names the prompts): pass --config '
                    'FILE or set HARNESS_CONFIG; the workspace has config/harness.yaml'
                )
            raise ConfigError(f'{config.path}: driver.prompts is not set: no prompt folder')
        prompts = Prompts(
            system_prompt(
                driver.prompts, names, doc_values(config), catalog is not None, driver.interface
            ),
            verifier_prompt(driver.prompts),
        )
    except (ConfigError, PromptError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    try:
        cells = reference_cells(task)
    except KeyError:
        cells = None
    if cells is not None and catalog is not None:
        try:
            # C's policy run leaves the programs half the episode's steps
            half = t.step_limit / load_embodiment().rates.control_hz / 2
            strategy, cells = strategy_cells(
                t.kind, t.instruction, cells, catalog, driver.strategy, half
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if driver.model == SCRIPTED:
            log(f'scripted baseline: strategy {strategy} for a {t.kind!r} task')
    timeout = driver.model_timeout_seconds
    try:
        model = make_model(driver.model, cells, timeout, log, driver.interface, names, actions_from)
        if not driver.verifier_enabled:  # no client made, none probed
            verifier = None
        elif driver.verifier == driver.model:
            verifier = model
        else:
            verifier = make_model(driver.verifier, cells, timeout, log)
    except ModelError as exc:
        raise UsageError(str(exc)) from None
    replies = len(getattr(model, 'cells', ())) + 1  # its steps and the finish
    if actions_from is not None and replies > driver.max_model_calls:
        log(
            f'the replay needs {replies} replies, more than driver.max_model_calls '
            f'{driver.max_model_calls}: the budget ends it first, as it would a model'
        )
    spec = EpisodeSpec(task, layout, seed, t.step_limit, randomize)
    return Prepared(config, spec, model, verifier, budgets, prompts, actions_from)


def _source_field(actions_from: Path | None, folder: Path) -> dict:
    """The episode record's `actions_from`: the replayed run folder, relative to this one (a
    bench's tree moves as a whole)."""
    if actions_from is None:
        return {}
    source = Path(actions_from).resolve()
    try:
        return {'actions_from': os.path.relpath(source, Path(folder).resolve())}
    except ValueError:  # another drive (Windows): no relative path
        return {'actions_from': str(source)}


def folder_word(text: str) -> str:
    """The user's `text` (a model's name) as part of a folder's name: only letters, digits and
    . _ - reach it (a '/' would put the folder elsewhere)."""
    return re.sub(r'[^A-Za-z0-9._-]', '_', text).lstrip('.') or '_'


def numbered(base: Path) -> Iterator[Path]:
    """`base`, then `base`-2, -3, ...: the names that things named in one second (by a time
    stamp) take in turn."""
    yield base
    for n in itertools.count(2):
        yield Path(f'{base}-{n}')


def run_folder_path(out: Path, task: str, layout: int, seed: int, model: str) -> Path:
    """A new folder under `out`, named by time, task, layout, seed and model."""
    stamp = time.strftime('%Y%m%d-%H%M%S')
    base = out / f'{stamp}-{task}-l{layout_name(layout)}-s{seed}-{folder_word(model)}'
    return next(path for path in numbered(base) if not path.exists())


def claim_folder(base: Path) -> Path:
    """The first of numbered(base) that did not exist, made now (two commands started in one
    second each get a folder of their own)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    for path in numbered(base):  # (endless: one is free)
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


@dataclass(frozen=True)
class GraphOptions:
    """How the episode's graph runs: `attach` joins the station running in ROS_DOMAIN_ID
    (started with ros2 launch or harness serve) instead of starting one; `foxglove_port`
    serves the episode's topics to Foxglove live (None: no live view)."""

    attach: bool = False
    foxglove_port: int | None = None


def _import_graph_modules() -> None:
    """Import the graph's modules (rclpy, MuJoCo's renderer, perception): a Ctrl-C during
    the import waits for its end and is raised then, as an interrupt (inside a C extension's
    initialisation it would become an ImportError with a traceback). Only the main thread
    can hold a signal back."""
    with interrupts_held():
        import harness_driver.driver_node  # noqa: F401

        import harness_bringup.episode_graph  # noqa: F401


def run_episode(
    prepared: Prepared,
    folder: Path,
    log: Callable[[str], None] = print,
    options: GraphOptions = GraphOptions(),
    warm: WarmGraph | None = None,
    since: float | None = None,
    finish: bool = True,
) -> EpisodeResult:
    """Start the graph, run the episode, stop the graph; or, on a `warm` station's graph
    (harness_bringup.warm_station), run the episode on it and leave it running. The run folder
    is written whatever happens; a graph that does not start is an `error` episode. Ends with
    the run's report.html (with `finish`; otherwise whoever asked writes the report and the
    dataset: `finish_run`). `since` (time.monotonic()): when this episode's part of the process
    began (default: the process's start)."""
    # the process's start (or the request's arrival), imports and the inputs' checks
    before = process_age_s() if since is None else time.monotonic() - since
    _import_graph_modules()
    config = prepared.config
    run = RunFolder(folder)
    params = config.write(run.path / 'params.yaml')
    episode = Episode(
        config.driver,
        None,  # set below, once the graph runs
        prepared.model,
        prepared.verifier,
        prepared.budgets,
        prepared.prompts,
        run,
        log,
        config.kernel.cell_timeout_seconds,
        policies=bool(config.kernel.policies),
        api_names=enabled_names(config.kernel.api_names, bool(config.kernel.policies)),
    )
    # What a model client says of its service (each retry and why) is an event of the run too.
    for client in {prepared.model, prepared.verifier} - {None}:
        if hasattr(client, 'note'):
            client.note = lambda line: run.event({'type': 'model_service', 'said': line})
    spec = prepared.spec
    episode.extra['recording'] = config.driver.recording
    run.event(
        {
            'type': 'episode',
            'task': spec.task,
            'layout': spec.layout,
            'seed': spec.seed,
            'randomize': axes_name(spec.randomize),
            'model': prepared.model.name,
            'interface': config.driver.interface,
            **_source_field(prepared.actions_from, run.path),
            'pid': os.getpid(),
        }
    )
    started = time.monotonic()
    try:
        with _noting_interrupts() as interrupts:
            return _run_graph(prepared, episode, run, params, log, options, interrupts, warm)
    finally:
        graph = time.monotonic()
        phases = {
            'start_and_checks': round(before, 3),
            'graph_and_episode': round(graph - started, 3),  # the summary's phases are within
        }
        # the dataset and the report are written whole: a Ctrl-C meanwhile is raised after
        with interrupts_held():
            if finish:
                phases.update(finish_run(run.path, finishing(config), log))
            if config.driver.recording != 'full':
                log('recording lean: no report.html (harness report RUN makes one)')
            update_summary(run.path, lambda summary: summary.update(episode_process_seconds=phases))


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[list[int]]:
    """The SIGINTs this process got while the graph runs, noted and then handled as before
    (a KeyboardInterrupt): a Ctrl-C reaches the kernel process too, and when the graph's start
    sees the kernel gone first, the episode was interrupted, not broken. Only the main thread
    can catch signals; elsewhere nothing is noted."""
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # a handler set outside Python: it could not be put back
        yield seen
        return

    def note(number, frame) -> None:
        seen.append(number)
        handle_as_before(previous, number, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def finishing(config: GraphConfig) -> tuple[str, ...]:
    """What is made of a run folder once its episode ended, as `config` asks: its dataset
    (driver.write_dataset) and its report, neither at the lean recording level."""
    if config.driver.recording != 'full':
        return ()
    return (('dataset',) if config.driver.write_dataset else ()) + ('report',)


def finishing_of(folder: Path) -> tuple[str, ...]:
    """What `finishing` asks of the run in `folder`, as its params.yaml configures it: what is
    made (again: a part the process was killed while it made is made whole) of a run whose
    process died after it wrote its summary; () when its configuration cannot be read."""
    from harness_types.config import load_config

    try:
        return finishing(load_config(Path(folder) / 'params.yaml'))
    except Exception:  # no configuration to say what it asks: nothing is made
        return ()


def finish_run(
    folder: Path, parts: tuple[str, ...], log: Callable[[str], None]
) -> dict[str, float]:
    """Make `parts` (`finishing`) of an ended episode's run folder, reading its bag once; the
    seconds each took (the bag's open in the first that reads it)."""
    from harness_recording.bag import OpenedBag

    seconds = {}
    with OpenedBag(Path(folder) / BAG) as opened:
        for part in parts:
            since = time.monotonic()
            if part == 'dataset':
                write_dataset_safely(folder, log, opened)
            elif part == 'report':
                write_report_safely(folder, log, opened)
            seconds[part] = round(time.monotonic() - since, 3)
    return seconds


def write_dataset_safely(
    folder: Path, log: Callable[[str], None], opened: OpenedBag | None = None
) -> None:
    """<run>/lerobot from the run's trials; a dataset that fails says so and loses nothing.
    `opened`: its bag (harness_recording.bag.OpenedBag), read once by whoever finishes it."""
    from harness_recording.lerobot import write_run_dataset

    try:
        path = write_run_dataset(folder, opened)
        if path is not None:
            log(f'trials as a LeRobot dataset: {path}')
    except Exception as exc:  # the run folder is complete without it
        log(f'the LeRobot dataset could not be written: {type(exc).__name__}: {exc}')


def write_report_safely(
    folder: Path, log: Callable[[str], None], opened: OpenedBag | None = None
) -> None:
    """report.html of the run; a report that fails says so and loses nothing else. `opened`:
    as write_dataset_safely takes it."""
    from harness_recording.run_report import write_report

    try:
        path = write_report(folder, opened)
        log(f'report: {path}')
    except Exception as exc:  # the run folder is complete without it
        log(f'the report could not be written: {type(exc).__name__}: {exc}')


def verifier_eyes(graph, config: GraphConfig) -> EvidenceTaker:
    """The tiered verifier's own perception of `graph`'s station (an EpisodeGraph: the
    configured backend, sharing passes with its kernel through the graph's folder)."""
    from harness_perception.evidence import EvidenceTaker

    k = config.kernel
    extra: dict = {'shared_passes': graph.passes}
    if k.perception == 'service':
        extra['service_url'] = k.perception_service_url
        extra['service_timeout_s'] = k.perception_service_timeout_seconds
    return EvidenceTaker(graph, load_embodiment(), k.perception, **extra)


def _run_graph(
    prepared: Prepared,
    episode: Episode,
    run: RunFolder,
    params: Path,
    log: Callable[[str], None],
    options: GraphOptions,
    interrupts: list[int],
    warm: WarmGraph | None = None,
) -> EpisodeResult:
    # Imported here: the supervisor process checks the inputs (prepare) and never starts a
    # graph, and these bring in rclpy, MuJoCo's renderer and perception (~0.5 s of every run).
    from harness_driver.driver_node import GraphError
    from harness_perception.evidence import goal_verifier

    from harness_bringup.episode_graph import EpisodeGraph

    spec, config = prepared.spec, prepared.config
    since = time.monotonic()
    bag = run.bag_path if config.driver.record_bag else None
    running = False  # the episode's loop runs: it writes the summary, whatever happens
    graph_context = (
        EpisodeGraph(params, bag, options.attach, config.driver.recording == 'lean')
        if warm is None
        else contextlib.nullcontext(warm)
    )
    try:
        with graph_context as graph:
            if warm is not None:
                warm.begin_episode(bag, config.driver)
            if options.foxglove_port is not None:
                graph.serve_foxglove(options.foxglove_port)
                log(
                    f'live view: Foxglove, open a connection to ws://localhost:{graph.foxglove_port}'
                )
            episode.station = graph
            if config.driver.goal_verifier:
                task = TASKS[spec.task]()
                carded = spec.task in tier3_tasks(config.driver.tier3_report_card)
                episode.goal_verifier = goal_verifier(
                    verifier_eyes(graph, config),
                    lambda: task.claims(episode.instruction),
                    carded,
                )
            # The backend and the recording go into the summary.
            episode.extra.update(graph.notes)
            graph.notes = episode.extra
            run.publish_to(graph.publish_event, graph.publish_model_image)
            episode.phases.seconds['graph_start'] = time.monotonic() - since
            log(f'graph up in ROS domain {graph.domain_id}')
            running = True
            return episode.run(spec)
    except GraphError as exc:
        detail = f'the graph did not start: {exc}'
        if interrupts:
            detail = f'interrupted while the graph started ({exc})'
        return _not_run(prepared, run, 'interrupted' if interrupts else 'error', detail, since)
    except KeyboardInterrupt:
        if running:  # while the graph stopped after the loop: the summary is written
            raise
        # A Ctrl-C (to the whole process group, as a terminal sends it) while the graph
        # started: this process writes the episode's summary, not only the supervisor.
        log('interrupted while the graph started')
        _not_run(prepared, run, 'interrupted', 'interrupted while the graph started', since)
        raise


def _not_run(
    prepared: Prepared, run: RunFolder, status: str, detail: str, since: float
) -> EpisodeResult:
    """The summary of an episode whose graph did not start (or was interrupted starting)."""
    spec = prepared.spec
    summary = {
        'task': spec.task,
        'layout': spec.layout,
        'seed': spec.seed,
        'model': prepared.model.name,
        'baseline': prepared.model.name == SCRIPTED,
        'status': status,
        'detail': detail,
        'model_calls': 0,
        'wall_seconds': round(time.monotonic() - since, 2),
        'bag': 'bag' if (run.bag_path / 'metadata.yaml').is_file() else None,
    }
    run.event({'type': 'end', 'status': status, 'detail': detail})
    run.summary(summary)
    run.close()
    return EpisodeResult(summary)
