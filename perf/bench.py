"""The whole scripted bench, this checkout against another one, side by side on this machine.

Runs `harness bench --model scripted` in each checkout in turn (base, this, base, this, ...
for --rounds rounds, so that both see the same machine), each with the same tasks, layouts
and seeds, and --jobs when given (else each checkout's own default: the base ran one episode
at a time on 2 cores, this checkout runs two warm stations; a result with --jobs J is saved
apart, as bench_jobs_J), and prints JSON:
- each run's wall seconds: the whole `harness bench` command, timed from here (the user's
  wait: its start, the stations' start and close, the tables and pages written), and the
  bench's own figure beside it (from its first episode's start to its last one's end); the
  ratio of the medians of the whole command's (base / this; the target of #53 is 3);
- each run's CPU seconds (every process it started, on every core) and their ratio;
- whether the results tables (bench.json without its timing: every episode's status,
  success, score, detail, model calls and steps, and every table) are identical across all
  runs of both checkouts, with every episode there and at least one success;
- each episode's fixed cost: the seconds of its command that are not its own work (not the
  model, the cells, the wrap-up, a policy's run, verification or the report after each cell),
  plus the dataset and report the bench made for it beside the next episode, where the bench
  makes them (the base made them in the episode); the target of #53 is a median of 0.5 s. The
  same without that finishing (the episode's own wall time) is printed beside it;
- the median of each of its parts (the start-up and closing steps each summary names), the
  bench's own accounting of its wall time (bench.json's timing.accounting) and the bytes of
  each run folder.

The base checkout must be a clone or worktree of this repository at the revision to compare
against (e.g. `git worktree add /tmp/base b0501de`); its `./harness` sets it up on first use.
Both checkouts' `src` are compiled first, as each one's set-up does: where
PYTHONDONTWRITEBYTECODE is set, a checkout run without its set-up (a worktree given another
checkout's environment) compiled its modules in every process it started, ~8% of the base's
bench here.

    python perf/bench.py --base-tree /tmp/base [--rounds 1] [--jobs J] [--tasks lift_cube ...]
        [--layouts 3|random:3 --seed-base 424200] [--this-args '--recording lean']
"""

import argparse
import collections
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _record import Target, add_save_argument, report

ROOT = Path(__file__).resolve().parents[1]


def compile_sources(tree: Path) -> None:
    """Compile `tree`'s modules ahead, as its tools/setup.sh does (quick when they are)."""
    subprocess.run(
        [sys.executable, '-m', 'compileall', '-q', '-j', '0', str(tree / 'src')],
        check=False,
        stdout=subprocess.DEVNULL,
    )


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every process this one started and waited for, with
    theirs: a bench's stations, kernels, program processes and recorders end before it does."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def set_up(tree: Path) -> None:
    """`tree`'s set-up, done now if its stamps say so (the first `./harness` command of a
    changed checkout builds it), so that no bench's CPU seconds include a build."""
    subprocess.run(
        [str(tree / 'harness'), '--help'], cwd=tree, check=True, stdout=subprocess.DEVNULL
    )


def run_bench(tree: Path, out: Path, args: argparse.Namespace) -> tuple[dict, float, float]:
    """One `harness bench` in `tree`: its bench.json, the CPU seconds its processes used (all
    of them, on every core) and the command's wall seconds."""
    command = [str(tree / 'harness'), 'bench', '--model', 'scripted']
    if args.jobs:
        command += ['--jobs', str(args.jobs)]
    command += ['--layouts', str(args.layouts), '--out', str(out)]
    if str(args.layouts).lower().startswith('random:'):  # (each takes its own seed option)
        command += ['--seed-base', str(args.seed_base)]
    else:
        command += ['--seed', str(args.seed)]
    if args.tasks:
        command += ['--tasks', *args.tasks]
    if tree == ROOT and args.this_args:
        command += args.this_args.split()
    print(f'[perf] {" ".join(command)}', file=sys.stderr, flush=True)
    before = children_cpu_seconds()
    started = time.monotonic()
    subprocess.run(command, cwd=tree, check=True, stdout=sys.stderr)
    wall = time.monotonic() - started
    cpu = children_cpu_seconds() - before
    (found,) = out.glob('*/bench.json')
    return json.loads(found.read_text()), round(cpu, 2), round(wall, 1)


def layouts_per_task(layouts: str) -> int:
    """How many layouts `--layouts N` or `--layouts random:N` runs of each task."""
    return int(str(layouts).split(':')[-1])


def shared_tasks(*trees: Path) -> list[str]:
    """The tasks every checkout has (a task's module is named after it): a newer checkout's
    extra tasks are not part of a side-by-side comparison."""
    where = Path('src/harness_bench/harness_bench/tasks')
    names = [{f.stem for f in (t / where).glob('*.py')} - {'__init__'} for t in trees]
    return sorted(set.intersection(*names))


def results(tables: dict) -> str:
    """The results tables (what must repeat exactly), as canonical JSON: the episodes in the
    order of their task and layout (a bench's own order may differ between checkouts)."""
    kept = {k: v for k, v in tables.items() if k != 'timing'}
    kept['episodes'] = sorted(kept.get('episodes', []), key=lambda e: json.dumps(e, sort_keys=True))
    return json.dumps(kept, sort_keys=True)


# What an episode does in proportion to its decisions and motion (the model, the cells and the
# wrap-up, a policy's run, the verifier a program asks, the report after each cell); the rest
# of its wall time is its fixed cost. (A checkout without the turn_report phase counts the
# reports after its cells in its fixed cost: ~0.03 s a cell here.)
OWN_WORK = ('cells', 'wrap_up', 'policy_to_end', 'model', 'verify', 'turn_report')


def episode_costs(
    bench_folder: Path,
) -> tuple[list[float], list[float], list[int], dict[str, list[float]]]:
    """Each episode's fixed cost (seconds of its command that are not OWN_WORK: its process's
    or station's start, the reset, the first images and judgement, the outcome, the judgement
    at the end, the bag, and the dataset and report wherever they are made), the same without
    what the bench finished for it beside the next episode, each run folder's bytes, and the
    fixed cost's parts by name: the graph's start, the outcome, the steps of start-up and
    closing (the summary's phase_parts_seconds; a checkout whose summaries lack them has none),
    the time outside every phase and the bench's finishing."""
    fixed, own, sizes, parts = [], [], [], collections.defaultdict(list)
    for f in sorted(bench_folder.glob('*/episodes/*/*/summary.json')):
        s = json.loads(f.read_text())
        total = (s.get('command_seconds') or {}).get('total')
        if total is None:
            continue
        phases = s.get('phases_seconds') or {}
        finishing = sum(float(v or 0) for v in (s.get('finished_by_bench_seconds') or {}).values())
        own.append(round(total - sum(float(phases.get(p) or 0) for p in OWN_WORK), 3))
        fixed.append(round(own[-1] + finishing, 3))
        sizes.append(sum(x.stat().st_size for x in f.parent.rglob('*') if x.is_file()))
        steps = {p: phases.get(p) for p in ('graph_start', 'outcome')}
        for phase, named in (s.get('phase_parts_seconds') or {}).items():
            steps |= {f'{phase}.{name}': seconds for name, seconds in named.items()}
        steps['outside_the_phases'] = total - sum(float(v or 0) for v in phases.values())
        if 'finished_by_bench_seconds' in s:
            steps['finished_by_the_bench'] = finishing
        for name, seconds in steps.items():
            if seconds is not None:
                parts[name].append(float(seconds))
    return fixed, own, sizes, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--base-tree', type=Path, required=True, help='the checkout to compare')
    parser.add_argument('--rounds', type=int, default=1, help='bench runs of each checkout')
    parser.add_argument(
        '--jobs', type=int, help="episodes at a time, both runs (default: each checkout's own)"
    )
    parser.add_argument('--layouts', default='3', help='N or random:N (as harness bench)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--seed-base', type=int, default=0, help='of the random:N layouts')
    parser.add_argument('--this-args', default='', help="more of this checkout's bench arguments")
    parser.add_argument(
        '--tasks', nargs='+', default=None, help='default: the tasks both checkouts have'
    )
    add_save_argument(parser)
    args = parser.parse_args()
    base_tree = args.base_tree.resolve()
    if not (base_tree / 'harness').is_file():
        parser.error(f'{base_tree} is not a checkout of this repository (no ./harness)')
    args.tasks = args.tasks or shared_tasks(base_tree, ROOT)
    for tree in (base_tree, ROOT):
        set_up(tree)
        compile_sources(tree)
    walls: dict[str, list[float]] = {'base': [], 'this': []}  # the whole command's
    bench_walls: dict[str, list[float]] = {'base': [], 'this': []}  # the bench's own figure
    accounting: dict[str, list[dict]] = {'base': [], 'this': []}
    jobs_ran: dict[str, int | None] = {'base': None, 'this': None}  # episodes at a time
    cpu: dict[str, list[float]] = {'base': [], 'this': []}
    tables: dict[str, list[str]] = {'base': [], 'this': []}
    successes: dict[str, list[int]] = {'base': [], 'this': []}
    incomplete: dict[str, list[int]] = {'base': [], 'this': []}  # episodes whose bag is not
    fixed: dict[str, list[float]] = {'base': [], 'this': []}
    own: dict[str, list[float]] = {'base': [], 'this': []}  # less the bench's finishing
    parts: dict[str, dict[str, list[float]]] = {'base': {}, 'this': {}}
    sizes: dict[str, list[int]] = {'base': [], 'this': []}
    with tempfile.TemporaryDirectory(prefix='perf-bench-') as scratch:
        for n in range(args.rounds):
            for name, tree in (('base', base_tree), ('this', ROOT)):
                bench, cpu_seconds, wall = run_bench(tree, Path(scratch) / f'{name}-{n}', args)
                walls[name].append(wall)
                bench_walls[name].append(bench['timing']['bench_wall_seconds'])
                jobs_ran[name] = bench['timing'].get('jobs')
                accounting[name].append(bench['timing'].get('accounting'))
                cpu[name].append(cpu_seconds)
                tables[name].append(results(bench))
                successes[name].append(sum(1 for e in bench['episodes'] if e.get('success')))
                summaries = (Path(scratch) / f'{name}-{n}').glob('*/episodes/*/*/summary.json')
                incomplete[name].append(
                    sum(1 for f in summaries if json.loads(f.read_text()).get('bag_incomplete'))
                )
                costs, own_costs, folder_bytes, named = episode_costs(Path(scratch) / f'{name}-{n}')
                fixed[name] += costs
                own[name] += own_costs
                for part, seconds in named.items():
                    parts[name].setdefault(part, []).extend(seconds)
                sizes[name] += folder_bytes
    medians = {k: statistics.median(v) for k, v in walls.items()}
    # Every run of both checkouts the same, every episode there, and not all of them failed
    # (two runs that fail alike are the same too).
    episodes = json.loads(tables['this'][0]).get('episodes', [])
    identical = (
        len(set(tables['base'] + tables['this'])) == 1
        and len(episodes) == len(args.tasks) * layouts_per_task(args.layouts)
        and min(successes['base'] + successes['this']) > 0
    )
    speedup = round(medians['base'] / medians['this'], 2)
    fixed_median = {k: round(statistics.median(v), 3) if v else None for k, v in fixed.items()}
    bytes_median = {k: int(statistics.median(v)) if v else None for k, v in sizes.items()}
    report(
        {
            # saved apart with --jobs (the default compares each checkout's own default)
            'bench': f'bench_jobs_{args.jobs}' if args.jobs else 'bench',
            'base_tree': str(base_tree),
            'jobs': args.jobs or "each checkout's default",
            'jobs_ran': jobs_ran,
            'wall_seconds': walls,
            'median_wall_seconds': medians,
            'bench_own_wall_seconds': bench_walls,
            'bench_accounting': accounting,
            'this_args': args.this_args,
            'speedup_base_over_this': speedup,
            # The CPU time of each run's whole process tree (the compile beforehand excluded):
            # the work itself, less moved by the machine's other load than wall time is.
            'cpu_seconds': cpu,
            'cpu_seconds_median': {k: round(statistics.median(v), 2) for k, v in cpu.items()},
            'cpu_base_over_this': round(
                statistics.median(cpu['base']) / statistics.median(cpu['this']), 2
            ),
            'episode_fixed_cost_seconds_median': fixed_median,
            'episode_fixed_cost_without_the_bench_finishing_seconds_median': {
                k: round(statistics.median(v), 3) if v else None for k, v in own.items()
            },
            'episode_fixed_cost_seconds_p90': {
                k: round(sorted(v)[int(0.9 * (len(v) - 1))], 3) if v else None
                for k, v in fixed.items()
            },
            # Each part's own median (medians do not add up to the fixed cost's): the start-up
            # and closing steps of the summary's phase_parts_seconds, the graph's start, the
            # outcome, and the episode's time outside its phases (its process's start and end,
            # or on a warm station the request's arguments, checks and run folder).
            'episode_fixed_cost_parts_seconds_median': {
                k: {part: round(statistics.median(v), 3) for part, v in sorted(named.items())}
                for k, named in parts.items()
            },
            'run_folder_bytes_median': bytes_median,
            'run_folder_bytes_total': {k: sum(v) for k, v in sizes.items()},
            'successes': successes,
            'bags_incomplete': incomplete,
            'results_identical_within_each': {k: len(set(v)) == 1 for k, v in tables.items()},
            'results_identical_between': identical,
        },
        [
            Target(
                'results tables the same in every run of both checkouts', int(identical), '==', 1
            ),
            Target(
                "the bench, base over this (the whole command's wall time; "
                f'--jobs {jobs_ran["base"]} for the base, {jobs_ran["this"]} for this checkout'
                + (')' if args.jobs else ', each its default)'),
                speedup,
                '>=',
                3,
                'x',
            ),
            Target(
                "this checkout's per-episode fixed cost, median",
                fixed_median['this'] if fixed_median['this'] is not None else float('inf'),
                '<=',
                0.5,
                's',
            ),
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
