"""The next demonstration collection, planned from what was recorded: the sampled layouts that
failed first (at most a third of the budget), then the layouts whose objects stand farthest from
every verified demonstration (farthest-point coverage of the workspace).

A layout is a task and a seed (sampled layouts are seed-addressed); where its objects stand is
what `placements` (injected: the task's sampler with the station's feasibility) says, the same
for the same seed. Coverage is the share of probe layouts (seeds no plan draws from) that have
a verified demonstration whose objects all stand within `radius_m` of theirs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from harness_recording.bench_table import is_not_run
from harness_recording.run_folder import found_in_runs
from harness_recording.trial_data import sampled_layouts
from harness_types.config import INT64_MAX
from harness_types.whole_file import read_text

from harness_learning.adoption import count_policy_runs

FAILED_SHARE = 1 / 3  # of the budget, at most, for layouts that failed
RADIUS_M = 0.03  # a probe layout is covered by a demonstration this close, object by object
PROBES = 100  # probe layouts per task
PROBE_BASE = 900_000  # their seeds: far from any seed a bench, a gate or a collection uses

Layout = tuple[str, int]  # (task, seed) of a sampled layout
Placements = Callable[[str, int], np.ndarray]  # (task, seed) -> (objects, 2) x, y in metres


class PlanError(ValueError):
    """The sources or the options give no plan; the message says why."""


@dataclass
class Recorded:
    """What the sources hold: verified demonstrations (trials of collected datasets) and the
    sampled layouts that failed: the episode failed, or a policy's run in it did not finish
    (the programs' fallback rescued it)."""

    demonstrations: set[Layout] = field(default_factory=set)
    failed: dict[Layout, str] = field(default_factory=dict)  # layout -> where it failed
    tried: set[Layout] = field(default_factory=set)  # every sampled layout a source ran
    unreadable: list[str] = field(default_factory=list)  # summaries left out (being written?)


SEED_MAX = 2**63 - 1  # a seed is a ROS int64 (the worker's reset)


def read_sources(paths: Iterable[Path]) -> Recorded:
    """Benches (`harness bench --out`, a gate's sides), demonstration collections (`harness
    demos --out`) and LeRobot datasets of the harness, in any mix: each folder is searched
    for episode summaries and dataset episode tables."""
    found = Recorded()
    for root in paths:
        root = Path(root)
        if not root.is_dir():
            raise PlanError(f'{root} is not a folder (a bench, a collection or a dataset)')
        held = 0  # sampled episodes and dataset layouts in this source (repeats too)
        for summary_path in found_in_runs(root, 'summary.json'):
            try:
                s = json.loads(summary_path.read_text())
            except (OSError, ValueError, RecursionError):  # (nested past the parser)
                found.unreadable.append(str(summary_path))
                continue
            if not isinstance(s, dict) or s.get('layout') != -1 or is_not_run(s):
                continue
            seed, outcome = s.get('seed'), s.get('outcome')
            if type(seed) is not int or not 0 <= seed <= SEED_MAX:
                raise PlanError(f'{summary_path}: its seed {seed!r} is not one of 0..{SEED_MAX}')
            if outcome is not None and not isinstance(outcome, dict):
                raise PlanError(f'{summary_path}: its outcome {outcome!r} is not an object')
            layout = (str(s.get('task')), seed)
            found.tried.add(layout)
            held += 1
            success = bool((outcome or {}).get('success'))
            runs, finished = count_policy_runs(summary_path.parent, success)
            if not success or finished < runs:
                found.failed.setdefault(layout, str(summary_path.parent))
        for info in found_in_runs(root, 'meta/info.json'):
            dataset = info.parent.parent
            if any((p / 'summary.json').is_file() for p in dataset.parents):
                continue  # a run's own dataset: a bench's trial, not a collection's
            try:
                layouts = sampled_layouts(dataset, verified=True)
            except (OSError, ValueError, KeyError) as exc:  # (pyarrow's ArrowInvalid too)
                why = ' '.join(str(exc).split())[:200]
                raise PlanError(f'the dataset {dataset} cannot be read: {why}') from None
            found.demonstrations |= layouts
            held += len(layouts)
        if not held:
            raise PlanError(f'{root} holds no sampled episode and no dataset of the harness')
    # a layout demonstrated since it failed is no longer a failure to collect
    for layout in found.demonstrations:
        found.failed.pop(layout, None)
    return found


def coverage(
    demos: list[np.ndarray], probes: list[np.ndarray], radius_m: float = RADIUS_M
) -> float:
    """The share of probe layouts with a demonstration whose every object lies within
    `radius_m` of the probe's."""
    if not probes:
        return 0.0
    if not demos:
        return 0.0
    stack = np.stack(demos)  # (demos, objects, 2)
    covered = 0
    for probe in probes:
        worst = np.linalg.norm(stack - probe[None], axis=2).max(axis=1)
        covered += bool((worst <= radius_m).any())
    return covered / len(probes)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """How far apart two layouts of one task are: the farthest any object moved."""
    return float(np.linalg.norm(a - b, axis=1).max())


@dataclass(frozen=True)
class PlannedLayout:
    task: str
    seed: int
    why: str  # 'failed in FOLDER' or 'coverage: N cm from every demonstration'


@dataclass
class Plan:
    layouts: list[PlannedLayout]
    coverage_before: dict[str, float]
    coverage_after: dict[str, float]
    radius_m: float
    probes: int
    budget: int
    sources: list[str]

    def to_json(self) -> dict:
        return {
            'layouts': [asdict(p) for p in self.layouts],
            'coverage': {
                'before': self.coverage_before,
                'after': self.coverage_after,
                'radius_m': self.radius_m,
                'probes_per_task': self.probes,
                'meaning': 'the share of probe layouts with a verified demonstration whose '
                'every object stands within radius_m of theirs (after: with the plan '
                'collected and verified)',
            },
            'budget': self.budget,
            'sources': self.sources,
        }


def plan_collection(
    recorded: Recorded,
    tasks: list[str],
    budget: int,
    placements: Placements,
    pool: list[int],
    held_out: set[Layout] = frozenset(),
    probes: int = PROBES,
    radius_m: float = RADIUS_M,
    sources: list[str] | None = None,
) -> Plan:
    """`budget` layouts of `tasks`: the failed ones first (at most a third), then, from the
    `pool` seeds, each time the layout farthest from every demonstration and every layout
    already planned. `held_out` layouts (a gate's) are never planned; failed ones are the
    exception the issue of the flywheel asks for: a layout that failed is collected."""
    if budget < 1:
        raise PlanError(f'the budget must be at least 1 layout, not {budget}')
    failed = sorted(layout for layout in recorded.failed if layout[0] in tasks)
    chosen: list[PlannedLayout] = [
        PlannedLayout(t, s, f'failed in {recorded.failed[(t, s)]}')
        for t, s in failed[: int(budget * FAILED_SHARE)]
    ]
    known = {t: [placements(t, s) for tt, s in recorded.demonstrations if tt == t] for t in tasks}
    probe_layouts = {t: [placements(t, PROBE_BASE + k) for k in range(probes)] for t in tasks}
    before = {t: round(coverage(known[t], probe_layouts[t], radius_m), 3) for t in tasks}
    covered = {t: list(known[t]) for t in tasks}
    for p in chosen:
        covered[p.task].append(placements(p.task, p.seed))
    taken = {(p.task, p.seed) for p in chosen} | recorded.demonstrations | recorded.tried
    candidates = [
        (t, s, placements(t, s))
        for t in tasks
        for s in pool
        if (t, s) not in taken and (t, s) not in held_out
    ]
    while len(chosen) < budget and candidates:

        def gap(c: tuple[str, int, np.ndarray]) -> float:
            near = covered[c[0]]
            return min((_distance(c[2], d) for d in near), default=float('inf'))

        best = max(candidates, key=lambda c: (gap(c), -c[1]))
        candidates.remove(best)
        far = gap(best)
        why = (
            f'coverage: {far * 100:.1f} cm from every demonstration and planned layout'
            if np.isfinite(far)
            else 'coverage: no demonstration of this task yet'
        )
        chosen.append(PlannedLayout(best[0], best[1], why))
        covered[best[0]].append(best[2])
    after = {t: round(coverage(covered[t], probe_layouts[t], radius_m), 3) for t in tasks}
    return Plan(chosen, before, after, radius_m, probes, budget, list(sources or []))


def read_plan(path: Path) -> list[Layout]:
    """The (task, seed) layouts of a plan file, in its order; PlanError says what is wrong."""
    try:
        doc = json.loads(read_text(Path(path)))
    except FileNotFoundError:
        raise PlanError(f'plan {path} does not exist') from None
    except IsADirectoryError:
        raise PlanError(f'plan {path} is a folder, not a plan file') from None
    except OSError as exc:  # a file on the way, a loop, a name too long, no permission
        raise PlanError(f'plan {path} cannot be read: {exc.strerror or exc}') from None
    except (ValueError, RecursionError) as exc:  # (nested past the parser)
        raise PlanError(f'plan {path} is not JSON: {type(exc).__name__}: {exc}') from None
    layouts = doc.get('layouts') if isinstance(doc, dict) else None
    if not isinstance(layouts, list) or not layouts:
        raise PlanError(f'plan {path}: expected {{"layouts": [{{"task": ..., "seed": ...}}]}}')
    out = []
    for i, item in enumerate(layouts):
        task = item.get('task') if isinstance(item, dict) else None
        seed = item.get('seed') if isinstance(item, dict) else None
        if not isinstance(task, str) or not isinstance(seed, int) or isinstance(seed, bool):
            raise PlanError(f'plan {path}: layout {i} needs a task (text) and a seed (integer)')
        if not 0 <= seed <= INT64_MAX:
            raise PlanError(f'plan {path}: layout {i} has the seed {seed}, not in 0..{INT64_MAX}')
        out.append((task, seed))
    if len(set(out)) != len(out):
        raise PlanError(f'plan {path} names a layout twice')
    return out
