"""The adoption gate: a trained policy replaces the catalogue's policy for some tasks only when,
on held-out sampled layouts it never trained on, it finishes at least as many of its runs as the
incumbent (the catalogue's current policy for those tasks, or the programs alone) and the
whole kit (the policy with the programs as fallback) succeeds at least as often.

What the gate reads is the two sides' run folders (`figures`); what it decides is `decide`; a
pass writes the catalogue entry (`catalogue_entry`, `replace_entry`, versioned, with the
gate's figures) and every decision is one line of the adoption log (`log_decision`). Nothing
here starts an episode: `harness policy adopt` runs the benches.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from harness_recording.bench_table import is_not_run
from harness_recording.trial_data import sampled_layouts

from harness_learning.training import CHECKPOINT, RECORD

# A policy run that ends the episode with the task done (the kernel ends an episode the moment
# its task succeeds) finished its task; the runs of the programs after it are the fallback.
FINISHED = 'EPISODE_ENDED'
ADOPTION_LOG = 'adoption_log.jsonl'  # beside the catalogue


class AdoptionError(ValueError):
    """The candidate, the catalogue or the gate's runs cannot be judged; the message says why."""


@dataclass(frozen=True)
class SideFigures:
    """One side of the gate on the held-out layouts: its episodes, how many succeeded (the
    kit: policy and fallback), its policy's runs and how many of them finished the task."""

    label: str
    episodes: int = 0
    not_run: int = 0
    successes: int = 0
    policy_runs: int = 0
    finished_runs: int = 0
    failed: list[tuple[str, int]] = field(default_factory=list)  # (task, seed) not succeeded

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def finish_rate(self) -> float | None:
        """Finished runs per policy run; None when no policy ran (the programs alone)."""
        return self.finished_runs / self.policy_runs if self.policy_runs else None

    def line(self) -> str:
        finish = (
            f'finished {self.finished_runs} of {self.policy_runs} policy runs'
            if self.policy_runs
            else 'no policy run'
        )
        return f'{self.label}: {self.successes}/{self.episodes} episodes succeeded, {finish}' + (
            f', {self.not_run} not run' if self.not_run else ''
        )


@dataclass(frozen=True)
class GateRule:
    """When a candidate passes. min_finish_rate: the share of its runs that must finish the
    task on their own (the programs alone finish none of a policy's runs, so against them
    this is the bar)."""

    min_finish_rate: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_finish_rate <= 1.0:
            raise ValueError(f'min_finish_rate must be in [0, 1], not {self.min_finish_rate}')


@dataclass(frozen=True)
class Decision:
    adopt: bool
    reasons: list[str]  # why, each a sentence with its numbers


def count_policy_runs(run: Path, success: bool) -> tuple[int, int]:
    """(runs, finished runs) of the policy in one run folder whose episode succeeded or not
    (`success`): a run finished when it ended the episode because the task succeeded, or when
    the episode succeeded and nothing but the wrap-up's way home moved after it (not the
    programs, not another run)."""
    executions = []
    log = run / 'kernel.log'
    if log.is_file():
        for line in log.read_text(errors='replace').splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and 'execution' in record:
                executions.append(record)
    runs = finished = 0
    for i, record in enumerate(executions):
        if record.get('execution') != 'run_policy':
            continue
        runs += 1
        # anything that moved after it, but the wrap-up's way home, did what it left
        helped = any(
            int(r.get('ticks') or 0) > 0 and r.get('execution') != 'home'
            for r in executions[i + 1 :]
        )
        ended_it = record.get('event') == FINISHED and 'succeeded' in str(record.get('detail'))
        finished += bool(success and (ended_it or not helped))
    return runs, finished


def figures(label: str, bench: Path) -> SideFigures:
    """The figures of one side from its bench folder (`harness bench --out`): every
    episode's summary.json and kernel.log."""
    summaries = sorted(Path(bench).glob('*/episodes/*/*/summary.json'))
    if not summaries:
        raise AdoptionError(f'{bench} holds no episode run folder: the bench did not run')
    episodes = not_run = successes = runs = finished = 0
    failed = []
    for path in summaries:
        summary = json.loads(path.read_text())
        if is_not_run(summary):
            not_run += 1
            continue
        episodes += 1
        success = bool((summary.get('outcome') or {}).get('success'))
        if success:
            successes += 1
        else:
            failed.append((str(summary.get('task')), int(summary.get('seed') or 0)))
        r, f = count_policy_runs(path.parent, success)
        runs, finished = runs + r, finished + f
    return SideFigures(label, episodes, not_run, successes, runs, finished, sorted(failed))


def decide(candidate: SideFigures, incumbent: SideFigures, rule: GateRule) -> Decision:
    """Adopt only when every test passes; the reasons say each test's numbers."""
    reasons, ok = [], True
    if candidate.not_run:
        ok = False
        reasons.append(
            f'{candidate.not_run} of its episodes did not run (a service failed, it did not '
            'start, or an interrupt ended it): it cannot be judged on them'
        )
    if not candidate.policy_runs:
        ok = False
        reasons.append('the candidate never ran (no run_policy in its episodes)')
    rate = candidate.finish_rate or 0.0
    if rate < rule.min_finish_rate:
        ok = False
        reasons.append(
            f'it finished {rate:.0%} of its runs, under the bar of {rule.min_finish_rate:.0%}'
        )
    else:
        reasons.append(f'it finished {rate:.0%} of its runs (bar {rule.min_finish_rate:.0%})')
    if incumbent.finish_rate is not None:
        verb = 'at least' if rate >= incumbent.finish_rate else 'fewer than'
        ok &= rate >= incumbent.finish_rate
        reasons.append(
            f'{verb} the incumbent ({incumbent.finish_rate:.0%} of its runs) on the same layouts'
        )
    kit_ok = candidate.success_rate >= incumbent.success_rate
    ok &= kit_ok
    reasons.append(
        f'the kit with it succeeded on {candidate.successes}/{candidate.episodes} layouts, '
        f'{"not fewer" if kit_ok else "fewer"} than with the incumbent '
        f'({incumbent.successes}/{incumbent.episodes})'
    )
    return Decision(bool(ok), reasons)


def training_record(candidate: Path) -> dict:
    """The candidate's training record (`harness policy train --out`), checked to be done."""
    path = Path(candidate) / RECORD
    if not path.is_file():
        raise AdoptionError(f'{candidate} is not a `harness policy train` folder (no {RECORD})')
    try:
        record = json.loads(path.read_text())
    except (ValueError, RecursionError) as exc:
        raise AdoptionError(f'{path} is not JSON: {exc}') from None
    if not isinstance(record, dict):
        raise AdoptionError(f'{path} is not a training record (not a JSON object)')
    if not isinstance(record.get('checkpoint', CHECKPOINT), str):
        raise AdoptionError(f'{path}: its checkpoint is not a folder name')
    layouts = record.get('layouts')
    pairs = isinstance(layouts, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int
        for p in layouts
    )
    if layouts is not None and not pairs:
        raise AdoptionError(f'{path}: its layouts must be a list of [task, seed] pairs')
    fps = record.get('fps')
    if fps is not None and not (
        isinstance(fps, int | float) and not isinstance(fps, bool) and 0 < fps < float('inf')
    ):
        raise AdoptionError(f'{path}: its fps must be a positive number, not {fps!r:.40}')
    tasks = record.get('tasks')
    if tasks is not None and not (
        isinstance(tasks, dict)
        and all(isinstance(q, list) and all(isinstance(x, str) for x in q) for q in tasks.values())
    ):
        raise AdoptionError(
            f'{path}: its tasks must map each instruction to the queries it located (a list '
            'of strings)'
        )
    if record.get('status') != 'done':
        raise AdoptionError(
            f'{candidate}: its training is {record.get("status")!r}, not done (resume it with '
            'the same `harness policy train` command)'
        )
    if not (Path(candidate) / record.get('checkpoint', CHECKPOINT) / 'model.safetensors').is_file():
        raise AdoptionError(f'{candidate} has no trained weights')
    return record


def trained_layouts(record: dict) -> set[tuple[str, int]]:
    """The (task, seed) sampled layouts the candidate's demonstrations came from: as its
    training recorded them when it began (the dataset's folder may hold other data since); a
    record from before that, from its dataset."""
    if record.get('layouts') is not None:  # ([]: its demonstrations were all of fixed layouts)
        return {(str(task), int(seed)) for task, seed in record['layouts']}
    root = Path(str(record.get('dataset') or ''))
    if not record.get('dataset') or not (root / 'meta' / 'info.json').is_file():
        raise AdoptionError(
            f"the candidate's dataset {root} is not here: the layouts it trained on cannot be "
            'told from held-out ones'
        )
    try:
        return sampled_layouts(root)
    except (OSError, ValueError, KeyError) as exc:  # (pyarrow's ArrowInvalid too)
        why = ' '.join(str(exc).split())[:300]
        raise AdoptionError(f"the candidate's dataset {root} cannot be read: {why}") from None


# A policy "usually finishes" a kind (the catalogue's `finishes`, which the strategy rule
# reads) when it finished at least this share of its runs alone.
USUALLY = 0.5


def catalogue_entry(
    record: dict,
    checkpoint: str,
    base: dict | None,
    version: int,
    gate: str,
    kind: str,
    finish_rate: float,
) -> dict:
    """The catalogue entry of an adopted candidate for `kind`: the incumbent's entry (its rate,
    cameras) with the candidate's checkpoint, instructions and a description of what it is and
    how it passed; a fresh one when the programs were the incumbent. It learned `kind` (the
    one the gate judged), and usually finishes it when its runs at the gate finished at least
    USUALLY of the time (`finish_rate`), whatever the incumbent's entry said."""
    entry = dict(base or {})
    entry['learned'] = [kind]
    entry['finishes'] = [kind] if finish_rate >= USUALLY else []
    width = (record.get('plan') or {}).get('width')
    kind = str(record.get('policy', 'act')).upper() + (f' (width {width})' if width else '')
    entry.update(
        {
            'description': (
                f"A learned policy: LeRobot's {kind}, trained here on CPU on "
                f'{record.get("demonstrations")} verified demonstrations '
                f'({record.get("steps_done")} steps; its record: {checkpoint}/{RECORD}). '
                f'Version {version}, adopted by the gate: {gate}'
            ),
            'endpoint': entry.get('endpoint', 'ws://127.0.0.1:0'),
            'serve': 'lerobot',
            'checkpoint': checkpoint,
            'version': version,
            'instructions': sorted(record.get('tasks') or {}),
        }
    )
    return entry


def replace_entry(catalogue: Path, name: str, entry: dict, before: str | None = None) -> None:
    """Write `entry` as policy `name` of the catalogue file: in place of its block, or a new
    one before policy `before`'s block (else after the last one), leaving every other line and
    comment as it was; a file whose layout that edit cannot keep is written anew from its data.
    Written whole, beside and renamed."""
    text = Path(catalogue).read_text()
    block = yaml.safe_dump({name: entry}, sort_keys=False, width=96, allow_unicode=True)
    block = ''.join(f'  {line}\n' for line in block.splitlines())
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(rf'  {re.escape(name)}:', ln)), None)
    ahead = next(
        (i for i, ln in enumerate(lines) if before and re.match(rf'  {re.escape(before)}:', ln)),
        None,
    )
    if start is None and ahead is not None:
        new = ''.join(lines[:ahead]) + block + ''.join(lines[ahead:])
    elif start is None:
        new = text + ('' if text.endswith('\n') else '\n') + block
    else:
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith('   ')):
            end += 1
        new = ''.join(lines[:start]) + block + ''.join(lines[end:])
    try:
        written = (yaml.safe_load(new) or {}).get('policies', {}).get(name)
    except (yaml.YAMLError, AttributeError):
        written = None
    if written != entry:  # a layout the block edit cannot keep (`policies: {}`, flow style)
        doc = yaml.safe_load(text) or {}
        doc.setdefault('policies', {})
        policies = dict(doc['policies'] or {})
        policies.pop(name, None)
        order = list(policies)
        at = order.index(before) if before in policies else len(order)
        order.insert(at, name)
        doc['policies'] = {n: entry if n == name else policies[n] for n in order}
        new = yaml.safe_dump(doc, sort_keys=False, width=96, allow_unicode=True)
    part = Path(catalogue).with_suffix('.yaml.part')
    part.write_text(new)
    part.replace(catalogue)


def store_checkpoint(candidate: Path, store: Path) -> Path:
    """Copy what serving the candidate needs (its record, loss curve and last checkpoint) to
    `store` (a new folder): the catalogue keeps working when the training folder goes."""
    record = training_record(candidate)
    if store.exists():
        raise AdoptionError(f'{store} exists: the catalogue would serve other weights')
    checkpoint = record.get('checkpoint', CHECKPOINT)
    if not isinstance(checkpoint, str):
        raise AdoptionError(f'{candidate}: its training record names no checkpoint folder')
    # copied beside, then renamed: an interrupted copy leaves no folder that blocks the version
    partial = store.with_name(f'.{store.name}.partial')
    shutil.rmtree(partial, ignore_errors=True)
    try:
        shutil.copytree(Path(candidate) / checkpoint, partial / checkpoint)
        for name in (RECORD, 'loss.csv'):
            if (Path(candidate) / name).is_file():
                shutil.copy2(Path(candidate) / name, partial / name)
        partial.rename(store)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return store


@dataclass(frozen=True)
class GateRecord:
    """One line of the adoption log."""

    time: str
    candidate: str
    entry: str
    tasks: list[str]
    seeds: list[int]
    incumbent: str
    adopted: bool
    reasons: list[str]
    candidate_figures: dict
    incumbent_figures: dict
    version: int | None  # the catalogue entry's version after the decision


def log_decision(catalogue: Path, record: GateRecord) -> Path:
    """Append the decision to the adoption log beside the catalogue."""
    path = Path(catalogue).parent / ADOPTION_LOG
    with open(path, 'a') as log:
        log.write(json.dumps(asdict(record)) + '\n')
    return path


def side_dict(side: SideFigures) -> dict:
    return {
        **asdict(side),
        'success_rate': round(side.success_rate, 3),
        'finish_rate': None if side.finish_rate is None else round(side.finish_rate, 3),
    }


def now() -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%S%z')
