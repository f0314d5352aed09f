"""Microseconds per FK and per IK solve (pinocchio FK; damped least squares IK), median and
p99, for reachable targets (the pose of random joints, solved from the default seed), for
targets beyond the arm's reach, and for what `pick` asks when it scans its approach pitches
(grasp and lift points over the table, tool pitched 90..30 degrees: many in reach but not
reachable within the joint limits). The target is a p99 under 20 ms over all of them. Prints
JSON.

    python perf/kinematics.py [--n 500]
"""

import argparse
import time

import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_types.transforms import quat_to_matrix, tool_quat
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf

TARGET_P99_MS = 20.0


def stats(samples_s: list[float]) -> dict:
    us = np.array(samples_s) * 1e6
    return {
        'median_us': round(float(np.median(us)), 1),
        'p99_us': round(float(np.percentile(us, 99)), 1),
    }


def timed(f, n_items) -> tuple[list[float], int]:
    samples, solved = [], 0
    for item in n_items:
        t = time.perf_counter()
        solved += bool(f(item))
        samples.append(time.perf_counter() - t)
    return samples, solved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=500, help='random targets per measurement')
    add_save_argument(parser)
    args = parser.parse_args()
    emb = load_embodiment()
    arm = StationKinematics(station_urdf(), emb).arms['left']
    rng = np.random.default_rng(0)
    qs = rng.uniform(emb.lower, emb.upper, size=(args.n, 6))
    targets = [arm.fk(q) for q in qs]
    fk, _ = timed(lambda q: arm.fk(q), qs)
    ik_pose, pose_solved = timed(lambda t: arm.ik(t.position, t.rotation).ok, targets)
    ik_position, position_solved = timed(lambda t: arm.ik(t.position).ok, targets)
    down = np.diag([1.0, -1.0, -1.0])  # tool pointing straight down
    # Straight down, 0.6 m above the arm's home link6 and 0.4-0.8 m out: the tool would put
    # link6 further from the shoulder than the arm reaches.
    home = arm.fk(np.zeros(6), 'link6').position
    radius = rng.uniform(0.4, 0.8, args.n // 5)
    angle = rng.uniform(-np.pi, np.pi, args.n // 5)
    out_of_reach = [
        home + [r * np.cos(a), r * np.sin(a), 0.6] for r, a in zip(radius, angle, strict=True)
    ]
    ik_unreachable, wrongly_solved = timed(lambda p: arm.ik(p, down).ok, out_of_reach)
    scan = [
        (np.array([x, y, emb.table_top_z + z]), quat_to_matrix(tool_quat(pitch)))
        for x in np.linspace(-0.45, -0.05, 5)
        for y in np.linspace(-0.3, 0.15, 4)
        for z in (0.02, 0.17)  # grasp and lift
        for pitch in range(90, 25, -10)
    ]
    ik_scan, scan_solved = timed(lambda t: arm.ik(t[0], t[1]).ok, scan)
    every = ik_pose + ik_position + ik_unreachable + ik_scan
    p99_ms = float(np.percentile(np.array(every) * 1e3, 99))
    report(
        {
            'bench': 'kinematics',
            'n': args.n,
            'fk_tcp': stats(fk),
            'ik_pose': stats(ik_pose),
            'ik_position': stats(ik_position),
            'ik_unreachable': stats(ik_unreachable),
            'ik_pose_solved_fraction': pose_solved / args.n,
            'ik_position_solved_fraction': position_solved / args.n,
            'ik_unreachable_solved': wrongly_solved,
            'ik_pick_scan': stats(ik_scan),
            'ik_pick_scan_solved_fraction': round(scan_solved / len(scan), 3),
            'ik_p99_ms': round(p99_ms, 2),
        },
        [
            Target(
                "IK p99 over reachable, out-of-reach and pick's scan targets",
                round(p99_ms, 2),
                '<',
                TARGET_P99_MS,
                'ms',
            )
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
