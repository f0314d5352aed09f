"""Every skill, declared once: its name, action type, the program API's signature and
docstring (what the model reads), how API arguments become a goal, and how the skill server
runs a goal. The skill server and the kernel both read this table; the program API's method
for a skill is made from its `api` stub.

Adding a skill: its action in harness_msgs/action/, its motion and `Skills` method, and an
entry here (ARCHITECTURE.md, "Adding a skill").

Docstrings may name configured values as `{control_hz:g}` or `{reactive_budget_ms:g}`; the
kernel renders them from the configuration (harness_types.docs.render_doc).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
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
    api: Callable  # a stub: its signature and docstring are the program API's
    goal: Callable[[dict], Any]  # the API call's arguments -> the action's Goal
    run: Callable[[Skills, Any, Options, dict], Execution]  # skill server: Goal -> Execution
    # API arguments that stay in the program (callables) and the reactive stage slot each fills
    # for the execution's duration.
    program_callbacks: dict[str, str] = field(default_factory=dict)
    reactive: bool = False  # the execution always calls the program's reactive stage


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


# The program API's stubs ---------------------------------------------------------------------


def move_joints(positions, arm: str = '', speed: float = 0.0, max_seconds: float = 0.0):
    """Move one arm's six joints to `positions` (rad) as one bounded execution.

    arm: 'left', 'right', or '' for the arm whose joints are nearest. speed: rad/s of
    the fastest joint (default 1.0). max_seconds: simulated-time bound (default: the
    planned duration plus margin). Returns an Execution; BLOCKED when the arm settles
    more than 0.05 rad short (something is in the way).
    """


def move_eef(
    position,
    quat=None,
    arm: str = '',
    speed: float = 0.0,
    max_seconds: float = 0.0,
    region=None,
):
    """Move a TCP to `position` [x, y, z] (m, world frame) through free space.

    quat: optional orientation [w, x, y, z]; without it only the position is solved.
    arm: 'left', 'right' or '' for the arm whose TCP is nearer. The path avoids the
    table and objects (the worker plans one when a straight joint move would collide).
    region: optional ([xmin, ymin, zmin], [xmax, ymax, zmax]); leaving it ends the
    execution with REGION_EXIT. An unreachable target gives SKILL_ERROR.
    """


def open_gripper(arm: str = '', fraction: float = 1.0):
    """Open a gripper to `fraction` (1 = fully open, 88 mm). arm '' opens both."""


def close_gripper(arm: str = '', fraction: float = 0.0):
    """Close a gripper (to `fraction`, default 0: squeeze). The result's `.holding` says
    whether the fingers stopped on something."""


def home(arm: str = ''):
    """Return an arm ('' = both) to its start pose (joints 0) on a collision-free path."""


def run_controller(
    fn,
    until=None,
    max_seconds: float = 5.0,
    region=None,
    hz: float = 25.0,
    cameras=(),
    camera_hz: float = 0.0,
):
    """Run `fn(obs)` hz times a second of simulated time on average, exactly (on the control
    ticks where each 1/hz s falls; hz at most {control_hz:g}, the tick rate); it returns
    targets: {'left': 6 joints}, {'left_eef': [x, y, z] or [x, y, z, qw, qx, qy, qz]} (solved
    by IK), {'left_gripper': fraction}, same for right. Ends when `until(obs)` holds
    (PREDICATE_SATISFIED, checked every tick), a guard fires, the arms it commands leave
    `region` (REGION_EXIT), an arm presses the table or an object it does not hold harder
    than {max_contact_force_n:g} N (FORCE_LIMIT), or max_seconds pass (TIMEOUT). cameras:
    names whose views arrive in obs.images (by name) every 1/camera_hz s (0: with every
    call), each a CameraView as look() gives (.rgb, .depth arrays, .fx .fy .cx .cy,
    .position, .rotation). Each call of fn and until has a {reactive_budget_ms:g} ms budget;
    every command is shielded."""


def run_policy(name: str, instruction: str, max_seconds: float = 60.0, until=None, region=None):
    """Let policy `name` (one list_policies() names) act, as one bounded execution: it is
    sent its cameras, the joint state and `instruction`, and answers chunks of joint
    targets, each action shielded, at its own rate.
    With policies enabled, call start(strategy, kind) first. Ends COMPLETED when the policy
    says it is done or the arms stall (still for a few seconds once they moved), TIMEOUT
    after max_seconds of simulated time, PREDICATE_SATISFIED when `until(obs)` holds
    (checked every tick), REGION_EXIT when link6 of an arm leaves `region` ([xmin, ymin,
    zmin], [xmax, ymax, zmax]), SHIELD_REJECTED, FORCE_LIMIT, GUARD_TRIGGERED, EPISODE_ENDED
    (the task succeeded or the step limit passed), or SKILL_ERROR when the policy cannot be
    reached or
    breaks off. The result's .chunks and .actions count what the policy sent and what ran."""


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
            move_joints,
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
            move_eef,
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
            open_gripper,
            lambda a: _goal(Gripper, a, arm=a['arm'], target=_fraction(a['fraction'])),
            lambda sk, g, o, run: sk.gripper(
                'open_gripper', g.arm, 1.0 if g.target < 0 else g.target, o, **run
            ),
        ),
        SkillSpec(
            'close_gripper',
            Gripper,
            close_gripper,
            lambda a: _goal(Gripper, a, arm=a['arm'], target=_fraction(a['fraction'])),
            lambda sk, g, o, run: sk.gripper(
                'close_gripper', g.arm, 0.0 if g.target < 0 else g.target, o, **run
            ),
        ),
        SkillSpec(
            'home',
            Home,
            home,
            lambda a: _goal(Home, a, arm=a['arm']),
            lambda sk, g, o, run: sk.home(g.arm, o, **run),
        ),
        SkillSpec(
            'run_controller',
            RunController,
            run_controller,
            lambda a: _goal(
                RunController,
                a,
                hz=float(a['hz']),
                cameras=[str(c) for c in a['cameras']],
                camera_hz=float(a['camera_hz']),
            ),
            lambda sk, g, o, run: sk.run_controller(g.hz, o, **run),
            program_callbacks={'fn': 'controller', 'until': 'until'},
            reactive=True,
        ),
        SkillSpec(
            'run_policy',
            RunPolicy,
            run_policy,
            _run_policy_goal,
            _run_policy,
            program_callbacks={'until': 'until'},
        ),
    )
}
