"""What a run folder costs on disk at each recording level (driver.recording), by part.

Runs the same scripted bench (warm stations) once per level, side by side on this machine, and
prints JSON: each level's bytes per episode (median, mean, max, total) and by part of the run
folder (bag, images the model was sent, report.html, lerobot/, ticks, the rest: each one's
median), and what 10,000 episodes would take (from the mean). The target: a lean run folder's
median under 1 MB, so that a bench of 10,000 episodes fits in 10 GB of a laptop's disk.

    python perf/disk.py [--tasks lift_cube place_in_bowl ...] [--layouts random:2]
        [--seed-base 424200]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _record import Target, add_save_argument, report

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ('full', 'lean')
PARTS = ('bag', 'images', 'report.html', 'lerobot', 'ticks')
DEFAULT_TASKS = [
    'lift_cube',
    'place_in_bowl',
    'stack_blocks_two',
    'push_to_zone',
    'insert_peg',
    'open_drawer',
    'pick_pictured',
    'sort_by_colour',
]


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob('*') if f.is_file())


def bench(level: str, out: Path, args: argparse.Namespace) -> list[Path]:
    """The run folders of one scripted bench at `level`."""
    command = [str(ROOT / 'harness'), 'bench', '--model', 'scripted', '--jobs', '1']
    command += ['--layouts', args.layouts]
    if args.layouts.lower().startswith('random:'):  # (fixed layouts take --seed, default 0)
        command += ['--seed-base', str(args.seed_base)]
    command += ['--tasks', *args.tasks, '--recording', level, '--out', str(out)]
    print(f'[perf] {" ".join(command)}', file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=sys.stderr)
    return sorted(f.parent for f in out.glob('*/episodes/*/*/summary.json'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', nargs='+', default=DEFAULT_TASKS)
    parser.add_argument('--layouts', default='random:2', help='as harness bench')
    parser.add_argument('--seed-base', type=int, default=424200)
    add_save_argument(parser)
    args = parser.parse_args()
    levels = {}
    with tempfile.TemporaryDirectory(prefix='perf-disk-') as scratch:
        for level in LEVELS:
            runs = bench(level, Path(scratch) / level, args)
            totals = [size(run) for run in runs]
            by_run = [{part: size(run / part) for part in PARTS} for run in runs]
            for total, sizes in zip(totals, by_run, strict=True):
                sizes['the rest'] = total - sum(sizes.values())
            # each part's own median over the runs (the medians do not add up to the total's)
            parts = {
                part: int(statistics.median(sizes[part] for sizes in by_run))
                for part in [*PARTS, 'the rest']
            }
            levels[level] = {
                'episodes': len(runs),
                'bytes_per_episode_median': int(statistics.median(totals)),
                'bytes_per_episode_mean': int(statistics.mean(totals)),
                'bytes_per_episode_max': max(totals),
                'bytes_total': sum(totals),
                'median_by_part': parts,
                # what 10000 such episodes take: their mean, not their median, sums up
                'gb_for_10000_episodes': round(statistics.mean(totals) * 1e4 / 1e9, 2),
            }
    full, lean = (levels[k]['bytes_per_episode_median'] for k in LEVELS)
    report(
        {
            'bench': 'disk',
            'tasks': args.tasks,
            'layouts': args.layouts,
            'seed_base': args.seed_base,
            'levels': levels,
            'full_over_lean': round(full / lean, 2),
        },
        [Target('a lean run folder, median', round(lean / 1e6, 3), '<=', 1.0, 'MB')],
        args.save,
    )


if __name__ == '__main__':
    main()
