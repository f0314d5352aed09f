"""`harness bench`: episodes of many tasks and layouts, in parallel (on warm stations, each a
process in a ROS domain of its own that serves episode after episode; with --station cold, each
episode in a process and domain of its own), summed up in tables."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from harness_bench.layout import SAMPLED, layout_name
from harness_bench.randomization import axes_name
from harness_driver.outcome_model import report_markdown as shadow_markdown
from harness_driver.outcome_model import shadow_card
from harness_recording.bench_table import (
    KEPT_FROM_STARTING,
    bench_tables,
    is_not_run,
    markdown,
    wall_accounting,
)
from harness_recording.report_card import markdown as report_card_markdown
from harness_recording.report_card import report_card
from harness_recording.run_report import write_bench_page
from harness_types.process import interrupts_held
from harness_types.whole_file import write_whole

from harness_bringup.supervisor import Interrupts, supervised


@dataclass(frozen=True)
class BenchEpisode:
    task: str
    layout: int
    seed: int
    interface: str = ''  # a rung of the interface ladder ('' = the configuration's)
    strategy: str = ''  # with policies: A, B or C forced ('' = the rule)
    randomize: tuple[str, ...] = ()  # scene randomisation axes (harness_bench.randomization)

    @property
    def name(self) -> str:
        rung = f'-{self.interface}' if self.interface else ''
        forced = f'-{self.strategy}' if self.strategy else ''
        varied = f'-r{axes_name(self.randomize)}' if self.randomize else ''
        return f'{self.task}-l{layout_name(self.layout)}-s{self.seed}{varied}{rung}{forced}'


NOT_STARTED = f'{KEPT_FROM_STARTING}the bench was interrupted'  # an episode's detail

STATION_GB = 2  # memory to allow a warm station (measured: ~1.05 GB with its kernel, recorder)


def default_jobs(warm: bool = True) -> int:
    """Warm stations: one per core, as memory allows (a station's graph runs in one Python
    process; its kernel, program process and recorder take the rest in bursts: on 2 cores two
    stations ran a 16-episode bench in 26 s, one in 40 s). A graph per episode: one per two
    cores (each starts the simulator and the kernel process)."""
    cores = os.cpu_count() or 2
    if not warm:
        return max(1, cores // 2)
    try:
        memory_gb = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30
    except (ValueError, OSError, AttributeError):  # not on every system
        memory_gb = 2 * STATION_GB
    return max(1, min(cores, int(memory_gb // STATION_GB)))


@dataclass(frozen=True)
class EpisodeJob:
    """What one bench episode runs: `harness run` with these arguments (on a warm station, or
    in a process of its own)."""

    episode: BenchEpisode
    model: str
    config: str | None
    extra: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    def argv(self, folder: Path) -> list[str]:
        """`harness` arguments of the episode (`harness run ...` writing under `folder`)."""
        e = self.episode
        argv = ['--config', self.config] if self.config is not None else []
        argv += ['run', e.task, '--layout', layout_name(e.layout), '--seed', str(e.seed)]
        if e.interface:
            argv += ['--interface', e.interface]
        if e.strategy:
            argv += ['--strategy', e.strategy]
        if e.randomize:
            argv += ['--randomize', ','.join(e.randomize)]
        return argv + ['--model', self.model, '--out', str(folder), *self.extra]

    def command(self, folder: Path) -> list[str]:
        return [sys.executable, '-m', 'harness_bringup.cli', *self.argv(folder)]


# Runs the episode of `harness run` arguments into its run folder (supervisor.supervised's
# arguments: run folder, the summary's known fields, argv, output, interrupts, environment);
# its exit code.
Supervise = Callable[..., int]


def run_episode_process(
    job: EpisodeJob,
    folder: Path,
    interrupts: Interrupts | None = None,
    supervise: Supervise | None = None,
) -> dict:
    """Run `job` as the episode's process, supervised from here as `harness run` supervises
    it (the bench checked every input before the first episode, so no `harness run` process
    checks them again for each: ~0.5 s of CPU an episode), writing under `folder` (its own
    ROS domain); its summary, with `run_folder` (a summary saying why when no run folder came
    out). `interrupts`: the Ctrl-Cs the bench saw, sent on to the episode (None: this
    process's own SIGINT and SIGTERM, as on a Ray node). `supervise`: what runs it (default
    `supervised`, a process of its own; a warm station's runner passes its own)."""
    supervise = supervise or supervised
    from harness_driver.actions_baseline import UNREPLAYABLE, SourceRunError, check_source

    from harness_bringup.run import replays_source, run_folder_path

    if interrupts is not None and interrupts.times():
        return not_run(job, 'interrupted', NOT_STARTED)
    folder.mkdir(parents=True, exist_ok=True)
    e = job.episode
    if replays_source(job.model, e.interface) and '--actions-from' not in job.extra:
        # The scripted actions rung replays the motions of the reference program's episode.
        source_job = replace(job, episode=replace(e, interface='programs'))
        source = run_episode_process(source_job, folder / 'source', interrupts, supervise)
        if 'run_folder' not in source:
            return not_run(job, source['status'], f'its programs-rung source: {source["detail"]}')
        if interrupts is not None and interrupts.times():
            return not_run(job, 'interrupted', NOT_STARTED)
        try:
            check_source(Path(source['run_folder']), e.task, e.layout, e.seed, e.randomize)
        except SourceRunError as exc:  # not run, as its source was (interrupted, ...)
            status = source['status'] if source['status'] in UNREPLAYABLE else 'error'
            return not_run(job, status, f'its programs-rung source: {exc}')
        job = replace(job, extra=(*job.extra, '--actions-from', source['run_folder']))
    run = run_folder_path(folder, e.task, e.layout, e.seed, job.model)
    base = {**_fields(job), 'baseline': job.model == 'scripted'}
    with open(folder / 'harness.log', 'a') as log:  # (a retry's output follows)
        code = supervise(run, base, job.argv(folder), log, interrupts, job.env)
    if not (run / 'summary.json').is_file():
        return not_run(job, 'error', f'no run folder (exit {code}; see {folder / "harness.log"})')
    summary = json.loads((run / 'summary.json').read_text())
    summary['run_folder'] = str(run)
    return summary


def _fields(job: EpisodeJob) -> dict:
    """The summary fields an episode has before it runs."""
    e = job.episode
    fields = {'task': e.task, 'layout': e.layout, 'seed': e.seed, 'model': job.model}
    fields['randomize'] = axes_name(e.randomize)
    if e.strategy:
        fields['forced_strategy'] = e.strategy
    return {**fields, 'interface': e.interface} if e.interface else fields


def not_run(job: EpisodeJob, status: str, detail: str) -> dict:
    """The summary of an episode that left no run folder of its own (here, or on a node)."""
    return {**_fields(job), 'status': status, 'detail': detail}


# A runner runs one episode job into a folder of this machine and returns its summary: here in
# a subprocess (run_episode_process), or on a cluster (harness_bringup.bench_ray); the bench's
# interrupts are passed to it.
Runner = Callable[[EpisodeJob, Path, Interrupts], dict]


@contextlib.contextmanager
def _recording(interrupts: Interrupts) -> Iterator[None]:
    """SIGINT and SIGTERM only recorded in `interrupts` while the bench runs (on the main
    thread; elsewhere signals cannot be caught): each episode's supervising thread sends them
    on, and the bench's loop stops starting episodes. A KeyboardInterrupt raised anywhere in
    the loop would instead leave the pool to run its whole queue."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        s: signal.signal(s, lambda *_: interrupts.add()) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class BenchInterrupted(KeyboardInterrupt):
    """The bench was interrupted: the summaries of the episodes that ran (or were running and
    ended as interrupted), by episode."""

    def __init__(self, summaries: dict[BenchEpisode, dict]) -> None:
        super().__init__()
        self.summaries = summaries


class BenchSetupError(Exception):
    """An episode met a set-up problem that every episode would meet (the model server refused
    the key, or has no such model): the bench started no other episode. `summaries`: those of
    the episodes that ran, by episode; `detail`: the problem."""

    def __init__(self, summaries: dict[BenchEpisode, dict], detail: str) -> None:
        super().__init__(detail)
        self.summaries, self.detail = summaries, detail


def run_episodes(
    episodes: list[BenchEpisode],
    model: str,
    folder: Path,
    config: Path | None,
    jobs: int,
    say: Callable[[str], None] = print,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    runner: Runner = run_episode_process,
) -> dict[BenchEpisode, dict]:
    """Run every episode with `harness run`'s arguments through `runner` (a warm station, or
    a process of its own in its own ROS domain; `env`: the environment of the process that runs
    it, default this process's), `jobs` at a time, each under
    `folder`/its name; their summaries. BenchInterrupted when the bench was interrupted (the
    running episodes were ended and wrote their run folders; none more started);
    BenchSetupError when an episode met a set-up problem (the running ones end; none more
    starts)."""
    config_text = str(config) if config is not None else None
    interrupts = Interrupts()

    setup: list[str] = []  # the set-up problem an episode met: no other starts
    kept_from_starting: set[BenchEpisode] = set()

    def one(e: BenchEpisode) -> dict:
        job = EpisodeJob(e, model, config_text, tuple(extra or ()), env)
        if setup:
            kept_from_starting.add(e)
            stopped = f'{KEPT_FROM_STARTING}the bench stopped ({setup[0]})'
            return not_run(job, 'not_started', stopped)
        if interrupts.times():  # (queued ones the pool took before it was cancelled: unsaid)
            kept_from_starting.add(e)
            return not_run(job, 'interrupted', NOT_STARTED)
        try:
            summary = runner(job, folder / e.name, interrupts)
        except Exception as exc:  # one episode that cannot run is an error, not the bench's end
            return not_run(job, 'error', f'the episode could not run: {type(exc).__name__}: {exc}')
        if summary.get('setup_error'):
            setup.append(str(summary.get('detail') or 'a set-up problem'))
        return summary

    summaries: dict[BenchEpisode, dict] = {}
    handled = 0  # interrupts acted on
    stop_said = False  # that the bench stops at a set-up problem
    with _recording(interrupts):
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            futures = {pool.submit(one, e): e for e in episodes}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if len(interrupts.times()) > handled:
                    if not handled:  # sent on to the running episodes; none more starts
                        for future in pending:
                            future.cancel()
                        say('interrupted: the running episodes end and write their run folders')
                    handled = len(interrupts.times())
                for future in finished:
                    if future.cancelled() or futures[future] in kept_from_starting:
                        continue
                    e = futures[future]
                    s = summaries[e] = future.result()
                    outcome = s.get('outcome') or {}
                    verdict = 'SUCCESS' if outcome.get('success') else 'no success'
                    if is_not_run(s):  # (as the tables count it)
                        verdict = 'not run'
                    said = (
                        f'{verdict}, {s.get("model_calls", 0)} calls, {s["wall_seconds"]} s'
                        if s.get('run_folder') and 'wall_seconds' in s
                        else s.get('detail') or 'no run folder'  # it did not run, or not whole
                    )
                    say(f'{len(summaries)}/{len(episodes)} {e.name}: {s.get("status")}, {said}')
                    if setup and not stop_said:
                        stop_said = True
                        for future in pending:
                            future.cancel()
                        say(f'the bench stops: {setup[0]} (every episode would meet it)')
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if interrupts.times():
        raise BenchInterrupted(summaries)
    if setup:  # (those it kept from starting are not among them, as an interrupt's are not)
        raise BenchSetupError(summaries, setup[0])
    return summaries


# The expert check tries at most this many seeds per sampled layout it is to keep.
EXPERT_TRIES = 3


@dataclass
class ExpertCheck:
    """The expert check of sampled layouts (RoboTwin 2.0's rule): a layout is kept only when
    the task's reference program, the scripted baseline, solves it. `runs`: the reference's
    episodes of the kept layouts, by their bench episode."""

    kept: dict[str, list[int]]
    dropped: dict[str, list[dict]]
    runs: dict[BenchEpisode, dict]

    def table(self) -> dict:
        """{task: {'kept': [seed, ...], 'dropped': [{'seed', 'why'}, ...]}} for bench.json."""
        return {t: {'kept': self.kept[t], 'dropped': self.dropped[t]} for t in self.kept}


def expert_check(
    tasks: list[str],
    count: int,
    seed_base: int,
    randomize: tuple[str, ...],
    folder: Path,
    config: Path | None,
    jobs: int,
    say: Callable[[str], None] = print,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    runner: Runner = run_episode_process,
) -> ExpertCheck:
    """For each task, the first `count` seeds from `seed_base` on whose sampled layout (with
    the scene randomised on `randomize`) the reference program succeeds, trying at most
    EXPERT_TRIES x `count` seeds; the reference's episodes run under `folder`, as the bench's
    run (`extra`: the perception), on the programs rung without policies."""
    next_seed = dict.fromkeys(tasks, seed_base)
    kept: dict[str, list[int]] = {t: [] for t in tasks}
    dropped: dict[str, list[dict]] = {t: [] for t in tasks}
    runs: dict[BenchEpisode, dict] = {}
    while True:
        wave = []
        for t in tasks:
            room = EXPERT_TRIES * count - len(kept[t]) - len(dropped[t])
            for _ in range(min(count - len(kept[t]), room)):
                wave.append(BenchEpisode(t, SAMPLED, next_seed[t], randomize=randomize))
                next_seed[t] += 1
        if not wave:
            break
        say(f'expert check: the reference program on {len(wave)} sampled layouts')
        results = run_episodes(wave, 'scripted', folder, config, jobs, say, extra, env, runner)
        for e in wave:
            s = results[e]
            if (s.get('outcome') or {}).get('success'):
                kept[e.task].append(e.seed)
                runs[e] = s
            else:
                why = (s.get('outcome') or {}).get('detail') or s.get('detail') or ''
                dropped[e.task].append({'seed': e.seed, 'why': f'{s.get("status")}: {why}'})
    for t in tasks:
        kept[t].sort()
        if len(kept[t]) < count:
            say(
                f'expert check: {t} kept {len(kept[t])} of {count} layouts '
                f'({len(dropped[t])} seeds dropped)'
            )
    return ExpertCheck(kept, dropped, runs)


def run_bench(
    episodes: list[BenchEpisode],
    model: str,
    out: Path,
    config: Path | None,
    jobs: int,
    say: Callable[[str], None] = print,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    runner: Runner = run_episode_process,
    expert_check: dict | None = None,
    done: dict[BenchEpisode, dict] | None = None,
) -> dict:
    """Run the episodes (`run_episodes`; those in `done` already ran: their summaries) and
    write bench.json, bench.md, bench.html and the verifier's report card (report_card.json/md)
    under `out`; `expert_check`: the layouts the expert check kept and dropped, for the tables;
    return the tables. An interrupted bench writes the tables of what it ran (the episodes it
    did not start are `interrupted`: not run, as are those the interrupt ended), then raises
    BenchInterrupted."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = done or {}
    todo = [e for e in episodes if e not in done]
    stopped: BenchInterrupted | BenchSetupError | None = None
    try:
        ran = run_episodes(todo, model, out / 'episodes', config, jobs, say, extra, env, runner)
    except (BenchInterrupted, BenchSetupError) as stop:
        stopped, ran = stop, stop.summaries
        status, detail = 'interrupted', NOT_STARTED
        if isinstance(stop, BenchSetupError):
            status, detail = 'not_started', f'{KEPT_FROM_STARTING}the bench stopped ({stop.detail})'
        for e in todo:
            if e not in ran:
                ran[e] = not_run(EpisodeJob(e, model, None), status, detail)
    summaries = {**done, **ran}
    if stopped is not None:
        say('writing the tables of what ran (a Ctrl-C now waits until they are whole)')
    # A Ctrl-C now (pressed again while the first one's episodes end, say) waits until the
    # tables are written whole.
    with interrupts_held():
        tables = _write_tables(
            out, episodes, summaries, runner, expert_check, started, jobs, stopped
        )
    if stopped is not None:
        raise stopped
    return tables


def _write_tables(
    out: Path,
    episodes: list[BenchEpisode],
    summaries: dict[BenchEpisode, dict],
    runner: Runner,
    expert_check: dict | None,
    started: float,
    jobs: int,
    stopped: Exception | None,
) -> dict:
    """The bench's tables of `summaries` (once `runner` has made the runs' last parts), written
    under `out` (bench.json/md, the report cards, bench.html); `started`: the bench's start
    (time.monotonic()); `stopped`: what ended it early (an interrupt, a set-up problem)."""
    drained = time.monotonic()
    getattr(runner, 'drain', lambda: None)()  # a warm station's runner: the last reports
    drained = time.monotonic() - drained
    for e, s in summaries.items():  # with what was added to them since (the finished parts)
        if s.get('run_folder'):
            with contextlib.suppress(OSError, ValueError):
                on_disk = json.loads((Path(s['run_folder']) / 'summary.json').read_text())
                summaries[e] = {**s, **on_disk}
    ordered = [summaries[e] for e in episodes]  # the table's order does not depend on timing
    tables = bench_tables(ordered)
    if expert_check:
        tables['expert_check'] = expert_check
    tables['timing']['bench_wall_seconds'] = round(time.monotonic() - started, 1)
    tables['timing']['accounting'] = wall_accounting(ordered, time.monotonic() - started)
    # the runs' last parts still being made when the last episode ended (warm stations)
    tables['timing']['accounting']['finishing_after_the_last_episode_seconds'] = round(drained, 2)
    tables['timing']['jobs'] = jobs
    if stopped is not None:  # ran: in part or whole (its run folder, or its first's)
        ran_count = sum(1 for s in ordered if s.get('run_folder') or s.get('retry_of'))
        ended = {'episodes': len(ordered), 'ran': ran_count}
        if isinstance(stopped, BenchSetupError):
            tables['stopped'] = {**ended, 'why': stopped.detail}
        else:
            tables['interrupted'] = ended
    write_whole(out / 'bench.json', (json.dumps(tables, indent=2) + '\n').encode())
    # a reply's text may reach a detail: a lone surrogate is written as '?', not an error
    write_whole(out / 'bench.md', markdown(tables).encode('utf-8', 'replace'))
    card = report_card(ordered)
    text = report_card_markdown(card)
    shadow = shadow_card(ordered)
    if shadow is not None:  # the outcome model scored the episodes (driver.outcome_model)
        card['outcome_model'] = shadow
        text += '\n' + shadow_markdown(
            shadow['card'],
            'Outcome model (shadow mode), on the layouts it did not train on '
            f'({shadow["left_out_trained_layouts"]} episodes on its training layouts left out)',
        )
    write_whole(out / 'report_card.json', (json.dumps(card, indent=2) + '\n').encode())
    write_whole(out / 'report_card.md', text.encode('utf-8', 'replace'))
    write_bench_page(out, tables, [s.get('run_folder') for s in ordered])
    return tables
