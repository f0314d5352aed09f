"""Success of the scripted expert on the bench: every task x layouts x seeds, one line each,
then the table. Not a test (it takes minutes): `python src/harness_expert/test/measure_expert.py
[--tasks a,b] [--layouts 0 1 2] [--seeds 0,1] [--json out.json]` (lists by commas or spaces)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from arx_x5_description.embodiment import load_embodiment
from harness_bench.tasks import TASKS
from harness_expert.expert import ScriptedExpert
from harness_worker.worker import Worker
from rollout import rollout

from arx_x5_description.urdf import station_urdf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    # Lists as '0,1,2' or '0 1 2'.
    parser.add_argument('--tasks', nargs='+', default=list(TASKS))
    parser.add_argument('--layouts', nargs='+', default=['0', '1', '2'])
    parser.add_argument('--seeds', nargs='+', default=['0', '1'])
    parser.add_argument('--json', default='')
    args = parser.parse_args()
    tasks = [t for item in args.tasks for t in item.split(',') if t]
    layouts = [int(n) for item in args.layouts for n in item.split(',') if n]
    seeds = [int(n) for item in args.seeds for n in item.split(',') if n]
    emb, urdf = load_embodiment(), station_urdf()
    worker = Worker(emb, urdf)
    expert = ScriptedExpert(emb, urdf)
    rows = []
    start = time.perf_counter()
    for task in tasks:
        for layout in layouts:
            for seed in seeds:
                r = rollout(worker, expert, task, layout, seed)
                row = dict(
                    task=task,
                    layout=layout,
                    seed=seed,
                    success=r.success,
                    detail=r.outcome.detail,
                    done=r.done,
                    info=r.info,
                    ticks=r.ticks,
                    rejections=r.rejections,
                    wall_s=round(r.wall_s, 2),
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
    worker.close()
    expert.close()
    print(f'# {len(rows)} rollouts in {time.perf_counter() - start:.0f} s')
    for task in dict.fromkeys(r['task'] for r in rows):
        mine = [r for r in rows if r['task'] == task]
        cells = ' '.join(
            f'{r["layout"]}/{r["seed"]}:{"ok" if r["success"] else "--"}' for r in mine
        )
        ok = sum(r['success'] for r in mine)
        print(f'{task:20s} {ok}/{len(mine)}  {cells}')
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
