"""One episode from the command line's point of view: check the inputs, start the graph, run
the model loop, leave the run folder. Shared by `harness run`, `harness bench` and bench/."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_bench.reference import reference_cells
from harness_bench.tasks import TASKS

from harness_driver.budgets import Budgets
from harness_driver.config import ConfigError, DriverConfig, load_prices
from harness_driver.episode import Episode, EpisodeResult, EpisodeSpec, Prompts
from harness_driver.models import SCRIPTED, ModelClient, ModelError, make_model
from harness_driver.prompts import PromptError, system_prompt, verifier_prompt
from harness_driver.run_folder import RunFolder


class UsageError(ValueError):
    """A bad task, layout, model or config: reported in one line, exit 2."""


@dataclass
class Prepared:
    spec: EpisodeSpec
    model: ModelClient
    verifier: ModelClient | None
    budgets: Budgets
    prompts: Prompts


def check_task(task: str, layout: int) -> None:
    """UsageError unless `task` exists and has `layout`."""
    if task not in TASKS:
        raise UsageError(f'unknown task {task!r}; known tasks: {", ".join(sorted(TASKS))}')
    if not 0 <= layout < TASKS[task].layouts:
        raise UsageError(f'{task} has layouts 0..{TASKS[task].layouts - 1}, not {layout}')


def prepare(config: DriverConfig, task: str, layout: int, seed: int) -> Prepared:
    """Everything that can be checked before the graph starts; UsageError says what is wrong."""
    check_task(task, layout)
    t = TASKS[task]()
    try:
        prices = load_prices(config.price_table)
        budgets = Budgets(config, prices)
        if not config.prompts:
            raise ConfigError('driver.prompts is not set: the config names no prompt folder')
        prompts_dir = config.prompts
        prompts = Prompts(
            system_prompt(prompts_dir, config.api_names), verifier_prompt(prompts_dir)
        )
    except (ConfigError, PromptError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    try:
        cells = reference_cells(task)
    except KeyError:
        cells = None
    try:
        model = make_model(config.model, cells, config.model_timeout_seconds, config.model_retries)
        verifier = (
            model
            if config.verifier == config.model
            else make_model(
                config.verifier, cells, config.model_timeout_seconds, config.model_retries
            )
        )
    except ModelError as exc:
        raise UsageError(str(exc)) from None
    return Prepared(
        EpisodeSpec(task, layout, seed, t.step_limit), model, verifier, budgets, prompts
    )


def run_folder_path(out: Path, task: str, layout: int, seed: int, model: str) -> Path:
    """A new folder under `out`, named by time, task, layout, seed and model."""
    stamp = time.strftime('%Y%m%d-%H%M%S')
    base = out / f'{stamp}-{task}-l{layout}-s{seed}-{model}'
    path, n = base, 1
    while path.exists():
        n += 1
        path = Path(f'{base}-{n}')
    return path


def run_episode(
    config: DriverConfig,
    config_file: Path | None,
    prepared: Prepared,
    folder: Path,
    log: Callable[[str], None] = print,
) -> EpisodeResult:
    """Start the graph, run the episode, stop the graph. The run folder is written whatever
    happens; a graph that does not start is an `error` episode."""
    from harness_driver.graph import EpisodeGraph, GraphError

    run = RunFolder(folder)
    episode = Episode(
        config,
        None,  # set below, once the graph runs
        prepared.model,
        prepared.verifier,
        prepared.budgets,
        prepared.prompts,
        run,
        log,
    )
    spec = prepared.spec
    run.event(
        {
            'type': 'episode',
            'task': spec.task,
            'layout': spec.layout,
            'seed': spec.seed,
            'model': prepared.model.name,
            'pid': os.getpid(),
        }
    )
    since = time.monotonic()
    bag = run.bag_path if config.record_bag else None
    try:
        with EpisodeGraph(config_file, bag) as graph:
            episode.station = graph
            graph.notes = episode.extra  # the recorder's outcome goes into the summary
            run.publish = graph.publish_event
            episode.phases.seconds['graph_start'] = time.monotonic() - since
            log(f'graph up in ROS domain {graph.domain_id}')
            result = episode.run(spec)
            graph.stop_recorder()
            return result
    except GraphError as exc:
        summary = {
            'task': spec.task,
            'layout': spec.layout,
            'seed': spec.seed,
            'model': prepared.model.name,
            'baseline': prepared.model.name == SCRIPTED,
            'status': 'error',
            'detail': f'the graph did not start: {exc}',
        }
        run.summary(summary)
        run.close()
        return EpisodeResult(summary)
