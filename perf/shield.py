"""Microseconds per shield check (accepted and rejected commands), median and p99, and what a
check is made of (link FK, collision depths). Prints JSON.

The shield is the worker's own: the station's forward kinematics (pinocchio) and collision
depths (the MuJoCo probe), on a station with objects resting on the table, as on every tick.

    python perf/shield.py [--n 5000]
"""

import argparse
import time

import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf

TARGET_MEDIAN_US = 30.0


def stats(samples_s: list[float]) -> dict:
    us = np.array(samples_s) * 1e6
    return {
        'median_us': round(float(np.median(us)), 2),
        'p99_us': round(float(np.percentile(us, 99)), 2),
    }


def timed(f, n: int) -> dict:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        samples.append(time.perf_counter() - t)
    return stats(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=5000, help='checks per measurement')
    add_save_argument(parser)
    args = parser.parse_args()
    emb = load_embodiment()
    worker = Worker(emb, station_urdf())
    worker.reset('stack_blocks_three', 0, 0)
    lanes = np.r_[np.ones(6), 0, np.ones(6), 0]
    # Away from the joint limits (at zero some joints rest on one), while the objects settle.
    raised = worker.measured() + 0.6 * np.r_[0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    start = worker.measured()
    for k in range(1, 76):
        worker.tick(start + (raised - start) * min(1.0, k / 50))
    shield, measured = worker.shield, worker.measured()
    rng = np.random.default_rng(0)
    accepted_t, rejected_t, counts = [], [], {'accepted': 0, 'rejected': 0}
    for _ in range(args.n):
        small = measured + rng.uniform(-0.02, 0.02, 14) * lanes
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
    accepted = stats(accepted_t)
    report(
        {
            'bench': 'shield',
            'n': args.n,
            'accepted': accepted,
            'rejected': stats(rejected_t),
            'verdicts': counts,
            'parts': {
                'link_fk': timed(lambda: worker.kinematics.link6_positions(measured), args.n),
                'collision_depths': timed(lambda: worker.station.contacts(measured), args.n),
            },
            'tick_us': 1e6 / emb.rates.control_hz,
        },
        [
            Target(
                'shield check of an accepted command, median',
                accepted['median_us'],
                '<',
                TARGET_MEDIAN_US,
                'µs',
            )
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
