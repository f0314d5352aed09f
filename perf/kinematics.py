"""Microseconds per FK and per IK solve (pinocchio), median and p99. Prints JSON.

python perf/kinematics.py [--n 500]
"""

import argparse
import json
import time

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf


def stats(samples_s: list[float]) -> dict:
    us = np.array(samples_s) * 1e6
    return {
        'median_us': round(float(np.median(us)), 1),
        'p99_us': round(float(np.percentile(us, 99)), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=500, help='random targets per measurement')
    args = parser.parse_args()
    emb = load_embodiment()
    arm = StationKinematics(station_urdf(), emb).arms['left']
    rng = np.random.default_rng(0)
    qs = rng.uniform(emb.lower, emb.upper, size=(args.n, 6))
    fk, ik_pose, ik_position, solved = [], [], [], 0
    for q in qs:
        t = time.perf_counter()
        target = arm.fk(q)
        fk.append(time.perf_counter() - t)
    for q in qs:
        target = arm.fk(q)
        t = time.perf_counter()
        solved += arm.ik(target.position, target.rotation).ok
        ik_pose.append(time.perf_counter() - t)
        t = time.perf_counter()
        arm.ik(target.position)
        ik_position.append(time.perf_counter() - t)
    print(
        json.dumps(
            {
                'bench': 'kinematics',
                'n': args.n,
                'fk_tcp': stats(fk),
                'ik_pose': stats(ik_pose),
                'ik_position': stats(ik_position),
                'ik_pose_solved_fraction': solved / args.n,
            }
        )
    )


if __name__ == '__main__':
    main()
