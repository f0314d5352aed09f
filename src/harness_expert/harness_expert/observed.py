"""What the expert knows of the robot from an observation: the measured joints, and the state
its own model (FK) adds to them. Shared by actuation (the hold command, each skill's result) and
locating (perception removes the robot's links, fingers included, from the views).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from arx_x5_description.embodiment import Embodiment
from harness_policy.observation import (
    PROMPT,
    TIME,
    ObservationError,
    joints_of,
    state_of,
    views_of,
)
from harness_types.robot_state import ARMS, RobotState, gripper_index
from harness_types.transforms import matrix_to_quat
from harness_worker.kinematics import StationKinematics


def start_command(obs: dict) -> np.ndarray:
    """The command that holds the measured pose: the joints as measured, each gripper's
    opening clipped to the command range (a measured opening may read a little outside 0..1,
    which the shield would refuse as a command)."""
    command = joints_of(obs).copy()
    grippers = [gripper_index(a) for a in ARMS]
    command[grippers] = np.clip(command[grippers], 0.0, 1.0)
    return command


def robot_state(obs: dict, kinematics: StationKinematics, emb: Embodiment) -> RobotState:
    """The RobotState a policy can know from an observation: joints, gripper openings, TCP
    and link6 poses by FK, and the finger joints from the openings (perception removes the
    fingers' points from the views at those joints). Forces and velocities read zero."""

    def fk(arm: str, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pose = kinematics.arms[arm].fk(joints)
        return pose.position, matrix_to_quat(pose.rotation)

    state = state_of(obs, fk)
    arms = {}
    for arm in ARMS:
        a = state.arm(arm)
        link6 = kinematics.arms[arm].fk(a.joints, 'link6')
        q7 = float(np.clip(emb.gripper.target(a.gripper), emb.gripper.lower, emb.gripper.upper))
        arms[arm] = dataclasses.replace(
            a,
            link6_position=link6.position,
            link6_quat=matrix_to_quat(link6.rotation),
            fingers=(q7, q7),
        )
    return dataclasses.replace(state, left=arms['left'], right=arms['right'])


def check_observation(obs: dict, first: bool = False) -> None:
    """Raises ObservationError when `obs` does not follow the protocol in what the expert reads:
    the state, the time, every camera's images and calibration, and (on the first observation,
    the one the instruction is read from) the prompt. Checked on every observation, also those
    the script will only read later, so that the caller hears of a bad one when it sends it."""
    joints_of(obs)
    if TIME in obs:
        t = np.asarray(obs[TIME])
        if t.shape != () or t.dtype.kind not in 'fiu' or not np.isfinite(t):
            raise ObservationError(f'{TIME!r} must be a finite number, got {t.dtype} {t.shape}')
    views_of(obs)
    if first and not isinstance(obs.get(PROMPT), str):
        what = 'no' if PROMPT not in obs else f'a {type(obs[PROMPT]).__name__} as its'
        raise ObservationError(f'the first observation has {what} {PROMPT!r} (the instruction)')
