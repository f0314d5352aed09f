"""Where the wall time of a whole episode goes, and how big the model's requests are.

Runs scripted-baseline episodes (`harness run TASK --model scripted`, the real graph: worker,
skill server, kernel process, driver) and prints JSON: wall seconds per phase (graph start,
episode start-up, model, cells, verify, wrap-up, outcome), how many times faster than their
simulated time the cells ran (`cells_x_real_time`; the target is 10) and, for every model
request, its reason, characters of text, number of images and PNG bytes. The scripted model
answers at once, so `model` is ~0 here: with Claude add its latency per call. Each task runs
twice, without and with the rosbag2 recording, and `bag_cost_ratio` is their wall-time ratio
(same run, same machine). With `--repeats N` every pair runs N times, interleaved, and
`cells_x_real_time_median` gives each task's median with and without the bag. The episodes run
in this process, started again (once) with what `harness run`'s supervisor gives an episode
process (`as_episode_process`: one BLAS thread, large arrays kept in the heap).

    python perf/episode.py [--tasks lift_cube place_in_bowl] [--layout 0] [--repeats 1]
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_bringup.processes import as_episode_process, use_wheels_ament_prefix
from harness_bringup.run import prepare, run_episode
from harness_types.config import load_config, with_overrides

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', nargs='+', default=['lift_cube', 'place_in_bowl'])
    parser.add_argument('--layout', type=int, default=0)
    parser.add_argument('--repeats', type=int, default=1, help='runs of each task and setting')
    add_save_argument(parser)
    args = parser.parse_args()
    as_episode_process()  # the episodes run in this process
    os.environ.setdefault('MUJOCO_GL', 'egl')
    config_file = ROOT / 'config' / 'harness.yaml'
    control_hz = load_embodiment().rates.control_hz
    episodes = []
    with tempfile.TemporaryDirectory() as out:
        runs = [(t, b, n) for n in range(args.repeats) for t in args.tasks for b in (False, True)]
        for task, record_bag, n in runs:
            config = with_overrides(
                load_config(config_file), 'driver', model='scripted', record_bag=record_bag
            )
            prepared = prepare(config, task, args.layout, 0)
            folder = Path(out) / f'{task}-{record_bag}-{n}'
            started = time.monotonic()
            result = run_episode(prepared, folder, log=lambda _m: None)
            total = time.monotonic() - started
            s = result.summary
            events = [json.loads(x) for x in (folder / 'events.jsonl').read_text().splitlines()]
            requests = [
                {k: e[k] for k in ('call', 'reason', 'characters', 'images', 'image_bytes')}
                for e in events
                if e['type'] == 'model_request'
            ]
            phases = s['phases_seconds']
            sim = s['env_steps'] / control_hz
            episodes.append(
                {
                    'task': task,
                    'layout': args.layout,
                    'record_bag': record_bag,
                    'status': s['status'],
                    'success': (s.get('outcome') or {}).get('success'),
                    'env_steps': s['env_steps'],
                    'sim_seconds': round(sim, 2),
                    'wall_seconds': round(total, 2),
                    'cells_x_real_time': round(sim / phases['cells'], 1)
                    if phases['cells']
                    else None,
                    'phases_seconds': phases,
                    'unaccounted_seconds': round(total - sum(phases.values()), 3),
                    'requests': requests,
                }
            )

    def median(task: str, record_bag: bool, key: str) -> float | None:
        values = [
            e[key]
            for e in episodes
            if e['task'] == task and e['record_bag'] == record_bag and e[key] is not None
        ]
        return round(statistics.median(values), 2) if values else None

    ratios = {
        task: round(median(task, True, 'wall_seconds') / median(task, False, 'wall_seconds'), 2)
        for task in args.tasks
    }
    cells = {
        task: {
            'without_bag': median(task, False, 'cells_x_real_time'),
            'with_bag': median(task, True, 'cells_x_real_time'),
        }
        for task in args.tasks
    }
    report(
        {
            'bench': 'episode',
            'model': 'scripted',
            'repeats': args.repeats,
            'bag_cost_ratio': ratios,
            'cells_x_real_time_median': cells,
            'episodes': episodes,
        },
        [
            Target(
                f"scripted {task}'s cells (recorded), median, times their simulated time",
                c['with_bag'],
                '>=',
                10,
                'x',
            )
            for task, c in cells.items()
            if c['with_bag'] is not None
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
