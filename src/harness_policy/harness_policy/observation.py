"""What a policy receives and what it answers, as plain dicts of numpy arrays (the openpi
convention: flat keys, images H x W x 3 uint8, the instruction as `prompt`).

Observation keys (a policy's configuration lists the cameras it is sent, and whether depth):
  observation/state                 float32 (14,)  measured joints in the command layout:
                                    left j1..j6 (rad), left gripper open fraction (0..1),
                                    right j1..j6, right gripper
  observation/images/<camera>       uint8 (H, W, 3) colour
  observation/depth/<camera>        float32 (H, W) metres along the optical axis (with depth)
  observation/intrinsics/<camera>   float64 (3, 3) pinhole K in pixels
  observation/extrinsics/<camera>   float64 (4, 4) the optical frame's pose in the world
                                    (camera -> world; x right, y down, z forward)
  observation/time                  float64 () seconds of episode time
  prompt                            str, the instruction

Reply keys:
  actions   float32 (H, 14) absolute targets in the command layout, one row per period of
            the policy's rate (the harness streams them through the shield); 1 <= H <= 1000
  done      bool, optional (the harness's addition; openpi servers never send it): the policy
            says the task is over; a server without it is stopped by a stall or the time bound
  info      str, optional: a sentence for the log (clipped to 300 characters)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from harness_types.camera import CameraView
from harness_types.robot_state import ArmState, RobotState

STATE = 'observation/state'
TIME = 'observation/time'
PROMPT = 'prompt'
ACTIONS = 'actions'
DONE = 'done'
INFO = 'info'
ACTION_SIZE = 14
MAX_CHUNK = 1000  # rows in one reply (40 s at 25 Hz): more is a server out of protocol
MAX_INFO = 300  # characters of a policy's sentence kept (it reaches logs and the model's turn)


def image_key(camera: str) -> str:
    return f'observation/images/{camera}'


def depth_key(camera: str) -> str:
    return f'observation/depth/{camera}'


def intrinsics_key(camera: str) -> str:
    return f'observation/intrinsics/{camera}'


def extrinsics_key(camera: str) -> str:
    return f'observation/extrinsics/{camera}'


class ObservationError(ValueError):
    """An observation or a reply that does not follow the protocol (says which key)."""


def observation(state: RobotState, views: list[CameraView], prompt: str) -> dict:
    """The observation dict of one moment: the measured state, each view's images and
    calibration, the instruction."""
    obs: dict = {
        STATE: state.measured.astype(np.float32),
        TIME: np.float64(state.time),
        PROMPT: str(prompt),
    }
    for view in views:
        if view.rgb is not None:
            obs[image_key(view.name)] = np.ascontiguousarray(view.rgb, dtype=np.uint8)
        if view.depth is not None:
            obs[depth_key(view.name)] = np.ascontiguousarray(view.depth, dtype=np.float32)
        obs[intrinsics_key(view.name)] = view.K
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = view.rotation, view.position
        obs[extrinsics_key(view.name)] = pose
    return obs


def cameras_of(obs: dict) -> list[str]:
    """The cameras an observation holds colour images of, in key order."""
    prefix = image_key('')
    return [k[len(prefix) :] for k in obs if isinstance(k, str) and k.startswith(prefix)]


def _array(obs: dict, key: str, shape: tuple | None = None) -> np.ndarray:
    if key not in obs:
        raise ObservationError(f'the observation has no {key!r}')
    value = np.asarray(obs[key])
    if shape is not None and value.shape != shape:
        raise ObservationError(f'{key!r} has shape {value.shape}, expected {shape}')
    # (strings such as 'nan' became numbers on conversion, unchecked)
    if value.dtype.kind not in 'iuf':
        raise ObservationError(f'{key!r} must hold real numbers, not {value.dtype}')
    if not np.all(np.isfinite(value)):
        raise ObservationError(f'{key!r} holds non-finite numbers')
    return value


def views_of(obs: dict) -> list[CameraView]:
    """The camera views an observation holds (colour, depth when sent, calibration)."""
    views = []
    for camera in cameras_of(obs):
        rgb = _array(obs, image_key(camera))
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ObservationError(
                f'{image_key(camera)!r} must be H x W x 3 uint8, got {rgb.shape} {rgb.dtype}'
            )
        depth = None
        if depth_key(camera) in obs:
            depth = _array(obs, depth_key(camera), rgb.shape[:2]).astype(np.float32)
        k = _array(obs, intrinsics_key(camera), (3, 3))
        pose = _array(obs, extrinsics_key(camera), (4, 4))
        views.append(
            CameraView(
                camera,
                rgb,
                float(k[0, 0]),
                float(k[1, 1]),
                float(k[0, 2]),
                float(k[1, 2]),
                pose[:3, 3].astype(float),
                pose[:3, :3].astype(float),
                depth=depth,
            )
        )
    return views


def joints_of(obs: dict) -> np.ndarray:
    """The 14-number measured state (float64)."""
    return _array(obs, STATE, (ACTION_SIZE,)).astype(float)


def state_of(obs: dict, fk=None) -> RobotState:
    """A RobotState with what a policy is sent: joints and gripper openings (and, given
    `fk(arm, joints) -> (tcp_position, tcp_quat)`, the TCP poses); forces and velocities are
    not sent and read zero, and so do the finger joints and link6 poses: a user that needs them
    (pixel perception finds the fingers by their joints) fills them from its robot model, as
    harness_expert.observed.robot_state does."""
    q = joints_of(obs)
    arms = {}
    for arm, base in (('left', 0), ('right', 7)):
        joints = q[base : base + 6]
        p, quat = fk(arm, joints) if fk is not None else (np.zeros(3), np.array([1.0, 0, 0, 0]))
        arms[arm] = ArmState(arm, joints, float(q[base + 6]), p, quat, p, quat)
    t = float(np.asarray(obs.get(TIME, 0.0)))
    return RobotState(arms['left'], arms['right'], 0, t)


@dataclass(frozen=True)
class Reply:
    """A policy's answer, checked: the chunk (H x 14 float64), whether it says it is done, and
    its sentence."""

    actions: np.ndarray
    done: bool = False
    info: str = ''


def reply_of(answer: object) -> Reply:
    """A policy's answer dict, checked; ObservationError says what is wrong (never another
    exception: a policy server is not trusted to answer well)."""
    if not isinstance(answer, dict):
        raise ObservationError(f'a reply must be a dict, got {type(answer).__name__}')
    if ACTIONS not in answer:
        keys = sorted(str(k)[:40] for k in answer)[:20]
        raise ObservationError(f'the reply has no {ACTIONS!r} (keys: {keys})')
    try:
        actions = np.asarray(answer[ACTIONS])
    except (ValueError, TypeError) as exc:  # ragged rows, objects numpy cannot make numbers of
        raise ObservationError(f"'actions' is not an H x {ACTION_SIZE} array: {exc}") from None
    if actions.ndim == 1 and actions.shape[0] == ACTION_SIZE:
        actions = actions[None, :]
    if actions.ndim != 2 or actions.shape[1] != ACTION_SIZE:
        raise ObservationError(
            f"'actions' must be H x {ACTION_SIZE} (the command layout), got {actions.shape}"
        )
    if not 0 < actions.shape[0] <= MAX_CHUNK:
        raise ObservationError(f"'actions' must hold 1 to {MAX_CHUNK} rows, got {actions.shape[0]}")
    if actions.dtype.kind not in 'fiu':
        raise ObservationError(f"'actions' must be numbers, got dtype {actions.dtype}")
    actions = actions.astype(float)
    if not np.all(np.isfinite(actions)):
        raise ObservationError("'actions' holds non-finite numbers")
    done = answer.get(DONE, False)
    if not isinstance(done, bool | np.bool_):
        raise ObservationError(f"'done' must be true or false, got {type(done).__name__}")
    info = answer.get(INFO, '')
    if not isinstance(info, str):
        raise ObservationError(f"'info' must be a string, got {type(info).__name__}")
    if len(info) > MAX_INFO:
        info = info[:MAX_INFO] + ' [clipped]'
    return Reply(actions, bool(done), info)


def reply(actions: np.ndarray, done: bool = False, info: str = '') -> dict:
    """The reply dict of a chunk (what a policy sends)."""
    out = {ACTIONS: np.asarray(actions, dtype=np.float32).reshape(-1, ACTION_SIZE), DONE: done}
    if info:
        out[INFO] = info
    return out
