"""Microseconds per shield check (accepted and rejected commands), median and p99. Prints JSON.

Uses the real station forward kinematics (pinocchio), as the worker does.

    python perf/shield.py [--n 5000]
"""

import argparse
import json
import time

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_shield.config import shield_config
from harness_shield.shield import Shield
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf


def stats(samples_s: list[float]) -> dict:
    us = np.array(samples_s) * 1e6
    return {
        'median_us': round(float(np.median(us)), 2),
        'p99_us': round(float(np.percentile(us, 99)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=5000, help='checks per measurement')
    args = parser.parse_args()
    emb = load_embodiment()
    kin = StationKinematics(station_urdf(), emb)
    shield = Shield(shield_config(emb), kin.link6_positions)
    measured = np.zeros(14)
    measured[[1, 2, 8, 9]] = 0.8
    measured[[6, 13]] = 1.0
    rng = np.random.default_rng(0)
    accepted_t, rejected_t, counts = [], [], {'accepted': 0, 'rejected': 0}
    for _ in range(args.n):
        small = measured + rng.uniform(-0.05, 0.05, 14) * np.r_[np.ones(6), 0, np.ones(6), 0]
        t = time.perf_counter()
        verdict = shield.check(small, measured)
        accepted_t.append(time.perf_counter() - t)
        counts['accepted' if verdict.accepted else 'rejected'] += 1
        jump = small.copy()
        jump[rng.integers(0, 6)] += 0.5
        t = time.perf_counter()
        verdict = shield.check(jump, measured)
        rejected_t.append(time.perf_counter() - t)
        counts['accepted' if verdict.accepted else 'rejected'] += 1
    print(
        json.dumps(
            {
                'bench': 'shield',
                'n': args.n,
                'accepted': stats(accepted_t),
                'rejected': stats(rejected_t),
                'verdicts': counts,
                'target_median_us': 100,
                'tick_us': 1e6 / emb.rates.control_hz,
            }
        )
    )


if __name__ == '__main__':
    main()
