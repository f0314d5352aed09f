"""The skill server's half of each skill: its action type, how an API call's arguments become
the action's goal, and how the skill server runs a goal. The program API's half (the stub the
model reads, the arguments that stay in the program) is the API table's
(harness_kernel.api_table); the kernel builds goals with `goal` and the skill server runs them.

Adding a skill: its action in harness_msgs/action/, its motion and `Skills` method, an entry
here, and its stub in the API table (docs/ARCHITECTURE.md, "Adding a skill").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from harness_policy.stream import PolicyRun
from harness_reactive.guards import Watch
from harness_types.convert import point_msg, quat_msg
from harness_types.execution import Execution
from harness_types.robot_state import signal_names

from harness_msgs.action import Gripper, Home, MoveEef, MoveJoints, RunController, RunPolicy
from harness_msgs.msg import Watch as WatchMsg
from harness_skills.execution import Options
from harness_skills.skills import Skills


@dataclass(frozen=True)
class SkillSpec:
    name: str
    action: type
    goal: Callable[[dict], Any]  # the API call's arguments -> the action's Goal
    run: Callable[[Skills, Any, Options, dict], Execution]  # skill server: Goal -> Execution


def options_into(options, args: dict) -> None:
    """The bounds every skill accepts (max_seconds, region) into an ExecutionOptions, and the
    kernel's own `until` watches ((signal, low, high) triples: the execution ends with
    PREDICATE_SATISFIED when one leaves its range)."""
    options.max_seconds = float(args.get('max_seconds') or 0.0)
    options.until = [
        WatchMsg(name='until', signal=str(sig), low=float(lo), high=float(hi), action='stop')
        for sig, lo, hi in args.get('until') or ()
    ]
    region = args.get('region')
    if region is not None:
        lo, hi = region
        options.use_region = True
        options.region_min = [float(v) for v in lo]
        options.region_max = [float(v) for v in hi]


def options_of(msg) -> Options:
    """ExecutionOptions message -> Options; ValueError for a malformed watch or region."""
    region = None
    if msg.use_region:
        lo, hi = np.array(msg.region_min), np.array(msg.region_max)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError('region bounds must be finite numbers')
        if np.any(lo > hi):
            raise ValueError(f'region_min {lo.tolist()} is above region_max {hi.tolist()}')
        region = (lo, hi)
    known = set(signal_names())
    for w in [*msg.watches, *msg.until]:
        if w.signal not in known:
            raise ValueError(f'unknown signal {w.signal!r}; signals: {", ".join(sorted(known))}')
    watches = tuple(
        Watch(w.name or w.signal, w.signal, w.low, w.high, w.action or 'stop') for w in msg.watches
    )
    until = tuple(Watch(w.name or w.signal, w.signal, w.low, w.high) for w in msg.until)
    return Options(msg.max_seconds, region, watches, msg.reactive, msg.execution_id, until)


# Goals ---------------------------------------------------------------------------------------


def _run_policy_goal(a: dict):
    """The API's arguments plus `entry`, the catalogue's entry the kernel resolved (name,
    endpoint, action_hz, cameras, depth, stall_seconds, timeout_seconds) and `to_end`."""
    p = a['entry']
    goal = _goal(
        RunPolicy,
        a,
        policy=str(p['name']),
        endpoint=str(p['endpoint']),
        instruction=str(a['instruction']),
        action_hz=float(p['action_hz']),
        cameras=[str(c) for c in p['cameras']],
        depth=bool(p['depth']),
        stall_seconds=float(p['stall_seconds']),
        timeout_seconds=float(p['timeout_seconds']),
        to_end=bool(a.get('to_end', False)),
        observation_keys=json.dumps(dict(p.get('observation_keys') or {}), sort_keys=True),
    )
    return goal


def _run_policy(sk: Skills, g, o: Options, run: dict):
    policy = PolicyRun(
        g.policy,
        g.endpoint,
        g.instruction,
        g.action_hz,
        tuple(g.cameras),
        g.depth,
        g.timeout_seconds,
        g.stall_seconds,
        g.to_end,
        tuple(json.loads(g.observation_keys or '{}').items()),
    )
    return sk.run_policy(policy, o, **run)


def _fraction(value) -> float:
    """A gripper fraction from a program: in [0, 1], refused otherwise (the goal's negative
    target means the skill's default on ROS; a program's -5 is a mistake, not that)."""
    fraction = float(value)
    if not 0.0 <= fraction <= 1.0:  # NaN too
        raise ValueError(f'fraction must be in [0, 1], got {fraction}')
    return fraction


def _goal(kind, args: dict, **fields):
    goal = kind.Goal(**fields)
    options_into(goal.options, args)
    return goal


def _move_eef_goal(a: dict):
    goal = _goal(
        MoveEef,
        a,
        arm=a['arm'],
        position=point_msg(a['position']),
        speed=float(a['speed']),
        cartesian=bool(a.get('cartesian', False)),
    )
    if a.get('quat') is not None:
        goal.orientation, goal.use_orientation = quat_msg(a['quat']), True
    return goal


def _eef_quat(g):
    o = g.orientation
    return [o.w, o.x, o.y, o.z] if g.use_orientation else None


SKILLS: dict[str, SkillSpec] = {
    s.name: s
    for s in (
        SkillSpec(
            'move_joints',
            MoveJoints,
            lambda a: _goal(
                MoveJoints,
                a,
                arm=a['arm'],
                positions=[float(v) for v in a['positions']],
                speed=float(a['speed']),
            ),
            lambda sk, g, o, run: sk.move_joints(g.arm, list(g.positions), g.speed, o, **run),
        ),
        SkillSpec(
            'move_eef',
            MoveEef,
            _move_eef_goal,
            lambda sk, g, o, run: sk.move_eef(
                g.arm,
                [g.position.x, g.position.y, g.position.z],
                _eef_quat(g),
                g.speed,
                o,
                g.cartesian,
                **run,
            ),
        ),
        SkillSpec(
            'open_gripper',
            Gripper,
            lambda a: _goal(Gripper, a, arm=a['arm'], target=_fraction(a['fraction'])),
            lambda sk, g, o, run: sk.gripper(
                'open_gripper', g.arm, 1.0 if g.target < 0 else g.target, o, **run
            ),
        ),
        SkillSpec(
            'close_gripper',
            Gripper,
            lambda a: _goal(Gripper, a, arm=a['arm'], target=_fraction(a['fraction'])),
            lambda sk, g, o, run: sk.gripper(
                'close_gripper', g.arm, 0.0 if g.target < 0 else g.target, o, **run
            ),
        ),
        SkillSpec(
            'home',
            Home,
            lambda a: _goal(Home, a, arm=a['arm']),
            lambda sk, g, o, run: sk.home(g.arm, o, **run),
        ),
        SkillSpec(
            'run_controller',
            RunController,
            lambda a: _goal(
                RunController,
                a,
                hz=float(a['hz']),
                cameras=[str(c) for c in a['cameras'] or ()],
                camera_hz=float(a['camera_hz']),
            ),
            lambda sk, g, o, run: sk.run_controller(g.hz, o, **run),
        ),
        SkillSpec(
            'run_policy',
            RunPolicy,
            _run_policy_goal,
            _run_policy,
        ),
    )
}
