"""Fuzz the shield with random and adversarial commands (10^6 by default) against an
independent oracle of its rules; prints JSON. Outside the test suite's time budget: it takes
minutes.

Every command goes through the worker's real shield (pinocchio FK, the MuJoCo station's
collision depths) from a measured state of a real simulated station; the oracle recomputes
each rule its own way (MuJoCo's FK for link6, its own arithmetic for limits, jumps and leads)
and says whether the command is unsafe. The run fails (exit 1) when an unsafe command was
accepted or any command was modified.

    python perf/shield_fuzz.py [--n 1000000] [--seed 0]
"""

import argparse
import sys
import time
from collections import Counter

import mujoco
import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import ARMS, load_embodiment
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf

SLACK = 1e-6  # the oracle's own rounding allowance


class Oracle:
    """The shield's rules, recomputed independently."""

    def __init__(self, worker: Worker) -> None:
        emb = worker.emb
        self.emb = emb
        self.station = worker.station
        s = emb.shield
        self.lower = np.array([*emb.lower, 0.0] * 2)
        self.upper = np.array([*emb.upper, 1.0] * 2)
        self.tol = s.joint_limit_tolerance_rad
        self.jump = s.max_joint_jump_rad
        self.cart = s.max_cartesian_jump_m
        self.lead = s.max_lead_rad
        self.coll = s.collision_tolerance_m
        self.wmin, self.wmax = np.array(s.workspace_min), np.array(s.workspace_max)
        m = worker.station.model
        self.model, self.data = m, mujoco.MjData(m)
        self.qpos = {a: [m.joint(n).qposadr[0] for n in emb.arm_joint_names(a)] for a in ARMS}
        self.link6 = {a: m.body(f'{a}_link6').id for a in ARMS}
        self.joints = [i for k in (0, 7) for i in range(k, k + 6)]

    def links(self, q):
        d = self.data
        d.qpos[:] = self.station.data.qpos
        for k, a in enumerate(ARMS):
            d.qpos[self.qpos[a]] = q[7 * k : 7 * k + 6]
        mujoco.mj_kinematics(self.model, d)
        return [d.xpos[self.link6[a]].copy() for a in ARMS]

    def outside(self, p):
        return float(np.linalg.norm(np.maximum(np.maximum(self.wmin - p, p - self.wmax), 0)))

    def unsafe(self, command, measured, last) -> str:
        """'' when the command keeps every rule, else the first rule it breaks."""
        q = np.asarray(command, dtype=object)
        if q.shape != (14,):
            return 'shape'
        try:
            q = np.array([float(v) for v in q])
        except (TypeError, ValueError):
            return 'shape'
        if not np.all(np.isfinite(q)):
            return 'finite'
        m = measured
        for i in self.joints:
            past_q = max(self.lower[i] - q[i], q[i] - self.upper[i])
            past_m = max(self.lower[i] - m[i], m[i] - self.upper[i], 0.0)
            if past_q > past_m + self.tol + SLACK:
                return 'joint_limit'
        for g in (6, 13):
            if not -SLACK <= q[g] <= 1 + SLACK:
                return 'gripper_range'
        for i in self.joints:
            from_m = abs(q[i] - m[i])
            from_last = abs(q[i] - last[i]) if last is not None else np.inf
            if from_m > self.jump + SLACK and from_last > self.jump + SLACK:
                return 'joint_jump'
            before = abs(last[i] - m[i]) if last is not None else 0.0
            if from_m > self.lead + SLACK and from_m > before + SLACK:
                return 'lead'
        links, links_m = self.links(q), self.links(m)
        last_links = self.links(last) if last is not None else None
        for k in range(2):
            if self.outside(links[k]) > self.outside(links_m[k]) + 1e-6:
                return 'workspace'
            from_m = np.linalg.norm(links[k] - links_m[k])
            from_last = np.linalg.norm(links[k] - last_links[k]) if last_links else np.inf
            if from_m > self.cart + 1e-6 and from_last > self.cart + 1e-6:
                return 'cartesian_jump'
        c, cm = self.station.contacts(q), self.station.contacts(m)
        for k in range(2):
            if c.table[k] > cm.table[k] + self.coll + 1e-6:
                return 'table_collision'
        if c.arms > cm.arms + self.coll + 1e-6:
            return 'arm_collision'
        return ''


def commands(rng, measured, emb, n_kinds):
    """One command of a random kind, built from the measured state."""
    lower = np.array([*emb.lower, 0.0] * 2)
    upper = np.array([*emb.upper, 1.0] * 2)
    kind = int(rng.integers(n_kinds))
    q = measured.copy()
    if kind == 0:  # anywhere, past the limits too
        q = rng.uniform(lower - 0.5, upper + 0.5)
    elif kind == 1:  # a small step: mostly safe
        q += rng.normal(0, 0.03, 14)
        q[[6, 13]] = np.clip(q[[6, 13]], 0, 1)
    elif kind == 2:  # one entry exactly around a boundary
        i = int(rng.integers(14))
        edge = lower[i] if rng.random() < 0.5 else upper[i]
        q[i] = edge + rng.choice([-1e-3, -1e-4, 0.0, 1e-4, 1e-3, 2e-3])
    elif kind == 3:  # jumps around the limits (0.3 rad, 0.6 rad lead)
        i = int(rng.choice([j for k in (0, 7) for j in range(k, k + 6)]))
        q[i] += rng.choice([-1, 1]) * rng.choice([0.29, 0.3, 0.31, 0.59, 0.6, 0.61, 1.2])
    elif kind == 4:  # non-finite or malformed
        choice = int(rng.integers(4))
        if choice == 0:
            q[int(rng.integers(14))] = rng.choice([np.nan, np.inf, -np.inf])
        elif choice == 1:
            return q[: int(rng.integers(14))]
        elif choice == 2:
            return np.concatenate([q, q[: int(rng.integers(1, 5))]])
        else:
            return ['x'] * 14
    else:  # toward the table or the other arm: a big step down or sideways
        i = int(rng.choice([1, 2, 8, 9, 0, 7]))
        q[i] += rng.uniform(-0.3, 0.3)
    return q


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=1_000_000)
    parser.add_argument('--seed', type=int, default=0)
    add_save_argument(parser)
    args = parser.parse_args()
    emb = load_embodiment()
    worker = Worker(emb, station_urdf())
    worker.reset('lift_cube', 0, args.seed)
    oracle = Oracle(worker)
    rng = np.random.default_rng(args.seed)
    counts = Counter()
    unsafe_accepted, modified, disagreements = [], 0, Counter()
    times = []
    started = time.perf_counter()
    for k in range(args.n):
        if k % 2000 == 0:  # a new measured state: a random safe pose of both arms
            worker.shield.reset()
            measured = worker.measured()
            lower, upper = np.array(emb.lower), np.array(emb.upper)
            for base in (0, 7):
                measured[base : base + 6] = rng.uniform(lower, upper) * 0.5 + (lower + upper) * 0.25
            last = None
        command = commands(rng, measured, emb, 6)
        before = repr(command) if isinstance(command, list) else command.tobytes()
        t = time.perf_counter()
        verdict = worker.shield.check(command, measured)
        times.append(time.perf_counter() - t)
        after = repr(command) if isinstance(command, list) else command.tobytes()
        same = verdict.command is command and after == before
        modified += not same
        rule = oracle.unsafe(command, measured, last)
        counts['accepted' if verdict.accepted else 'rejected'] += 1
        for r in verdict.reasons:
            counts[f'reason_{r.check}'] += 1
        if verdict.accepted and rule:
            unsafe_accepted.append({'rule': rule, 'command': np.asarray(command).tolist()})
        if not verdict.accepted and not rule:
            disagreements[verdict.reasons[0].check] += 1  # stricter than the oracle
        if verdict.accepted:
            last = np.asarray(command, dtype=float)
    us = np.array(times) * 1e6
    result = {
        'bench': 'shield_fuzz',
        'n': args.n,
        'seed': args.seed,
        'wall_s': round(time.perf_counter() - started, 1),
        'unsafe_accepted': len(unsafe_accepted),
        'modified': modified,
        'verdicts': dict(sorted(counts.items())),
        'rejected_but_oracle_found_safe': dict(disagreements),
        'check_us_median': round(float(np.median(us)), 1),
        'check_us_p99': round(float(np.percentile(us, 99)), 1),
        'first_unsafe_accepted': unsafe_accepted[:5],
    }
    report(
        result,
        [
            Target('unsafe commands the shield accepted', len(unsafe_accepted), '==', 0),
            Target('commands the shield changed (it rejects, never fixes)', modified, '==', 0),
        ],
        args.save,
    )
    return 1 if unsafe_accepted or modified else 0


if __name__ == '__main__':
    sys.exit(main())
