"""Kinematics of the station with pinocchio: FK of link6 and TCP, Jacobians, IK.

Each arm gets a 6-joint model reduced from the station URDF (grippers and the other arm locked),
so one solve touches only the joints it moves. Poses are in the world frame.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from arx_x5_description.embodiment import ARMS, Embodiment


@dataclass(frozen=True)
class Pose:
    """A rigid pose in the world frame: position (m) and rotation matrix."""

    position: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))


@dataclass(frozen=True)
class IKResult:
    """Joints that reach the target (`ok`), or why none were found.

    `position_error` (m) and `rotation_error` (rad) are those of the returned joints; on a
    failure they are the best the solver reached, and `joints` must not be commanded.
    """

    ok: bool
    joints: np.ndarray
    position_error: float
    rotation_error: float
    reason: str = ''


class ArmKinematics:
    """FK, Jacobian and IK of one arm (6 joints) of the station."""

    POSITION_TOL = 1e-4  # m, converged when both errors are below these
    ROTATION_TOL = 1e-3  # rad
    MAX_ITERATIONS = 200
    RESTARTS = 48

    def __init__(self, model: pin.Model, emb: Embodiment, arm: str) -> None:
        self.arm = arm
        keep = set(emb.arm_joint_names(arm))
        lock = [jid for jid in range(1, model.njoints) if model.names[jid] not in keep]
        self.model = pin.buildReducedModel(model, lock, pin.neutral(model))
        self.data = self.model.createData()
        self.link6 = self.model.getFrameId(f'{arm}_link6')
        self.tcp = self.model.getFrameId(f'{arm}_tcp')
        self.lower = np.array(emb.lower)
        self.upper = np.array(emb.upper)
        self._frames = {'link6': self.link6, 'tcp': self.tcp}
        pin.framesForwardKinematics(self.model, self.data, pin.neutral(self.model))
        self._base = self.data.oMf[self.model.getFrameId(f'{arm}_base_link')].copy()
        # Restart seeds are fixed, so IK answers are deterministic (see _starts).
        rng = np.random.default_rng(0)
        self._seeds = rng.uniform(self.lower, self.upper, size=(self.RESTARTS, 6))

    def _frame(self, frame: str) -> int:
        try:
            return self._frames[frame]
        except KeyError:
            raise ValueError(f"frame must be 'link6' or 'tcp', got {frame!r}") from None

    def fk(self, q: np.ndarray, frame: str = 'tcp') -> Pose:
        """World pose of `frame` ('link6' or 'tcp') for the arm's six joints `q`."""
        fid = self._frame(frame)
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, dtype=float))
        placement = self.data.oMf[fid]
        return Pose(placement.translation.copy(), placement.rotation.copy())

    def fk_both(self, q: np.ndarray) -> tuple[Pose, Pose]:
        """(link6, tcp) world poses in one forward pass."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, dtype=float))
        a, b = self.data.oMf[self.link6], self.data.oMf[self.tcp]
        return (
            Pose(a.translation.copy(), a.rotation.copy()),
            Pose(b.translation.copy(), b.rotation.copy()),
        )

    def jacobian(self, q: np.ndarray, frame: str = 'tcp') -> np.ndarray:
        """6x6 Jacobian of `frame`: rows (linear xyz, angular xyz) in world-aligned axes."""
        fid = self._frame(frame)
        q = np.asarray(q, dtype=float)
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        return pin.getFrameJacobian(self.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED).copy()

    def ik(
        self,
        position: np.ndarray,
        rotation: np.ndarray | None = None,
        seed: np.ndarray | None = None,
        frame: str = 'tcp',
        position_tol: float = 1e-3,
        rotation_tol: float = 0.01,
    ) -> IKResult:
        """Joints within limits that put `frame` at `position` (and `rotation` when given).

        Damped least squares from `seed` (default: all zeros), then from fixed restart seeds.
        Succeeds only when the reached pose is within `position_tol` m and `rotation_tol` rad;
        otherwise returns `ok=False` with the best attempt's errors and the reason.
        """
        fid = self._frame(frame)
        target_p = np.asarray(position, dtype=float)
        target_r = None if rotation is None else np.asarray(rotation, dtype=float)
        if target_p.shape != (3,) or not np.all(np.isfinite(target_p)):
            return IKResult(
                False, np.zeros(6), np.inf, np.inf, 'target position must be 3 finite numbers'
            )
        if target_r is not None and (target_r.shape != (3, 3) or not np.all(np.isfinite(target_r))):
            return IKResult(
                False, np.zeros(6), np.inf, np.inf, 'target rotation must be a 3x3 matrix'
            )
        first = (
            np.zeros(6)
            if seed is None
            else np.clip(np.asarray(seed, dtype=float), self.lower, self.upper)
        )
        best: tuple[float, np.ndarray, float, float] | None = None
        rng = np.random.default_rng(1)
        for start in self._starts(first, target_p):
            q, ep, er = self._solve(fid, target_p, target_r, start)
            # A near miss is usually a joint resting on its limit: nudge it off. When far off,
            # another start serves better.
            kicks = 2 if ep <= 0.02 else 0
            for _ in range(kicks):
                if ep <= position_tol and er <= rotation_tol:
                    break
                nudged = np.clip(q + rng.normal(0.0, 0.3, 6), self.lower, self.upper)
                q, ep, er = self._solve(fid, target_p, target_r, nudged)
            if ep <= position_tol and er <= rotation_tol:
                return IKResult(True, q, ep, er)
            score = ep + 0.1 * er
            if best is None or score < best[0]:
                best = (score, q, ep, er)
        assert best is not None
        _, q, ep, er = best
        what = 'position' if target_r is None else 'pose'
        return IKResult(
            False,
            q,
            ep,
            er,
            f'{self.arm} arm cannot reach the {what} within joint limits '
            f'(closest: {ep * 1000:.1f} mm, {np.degrees(er):.1f} deg away)',
        )

    def _starts(self, first: np.ndarray, target_p: np.ndarray) -> Iterator[np.ndarray]:
        yield first
        local = self._base.rotation.T @ (target_p - self._base.translation)
        yaw = float(np.clip(np.arctan2(local[1], local[0]), self.lower[0], self.upper[0]))
        # Shoulder and elbow decide the branch; a coarse grid of them, turned toward the target,
        # escapes the local minima where an elbow rests on its limit.
        for j2 in (0.4, 1.2, 2.0, 2.8):
            for j3 in (0.4, 1.2, 2.0, 2.8):
                yield np.array([yaw, j2, j3, 0.0, 0.0, 0.0])
        yield from self._seeds

    def _solve(
        self, fid: int, target_p: np.ndarray, target_r: np.ndarray | None, q: np.ndarray
    ) -> tuple[np.ndarray, float, float]:
        model, data = self.model, self.data
        q = q.copy()
        rows = slice(0, 6) if target_r is not None else slice(0, 3)
        damping = 1e-4
        ep = er = np.inf
        for _ in range(self.MAX_ITERATIONS):
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            oMf = data.oMf[fid]
            err = np.zeros(6)
            err[:3] = target_p - oMf.translation
            if target_r is not None:
                err[3:] = oMf.rotation @ pin.log3(oMf.rotation.T @ target_r)
            ep = float(np.linalg.norm(err[:3]))
            er = float(np.linalg.norm(err[3:]))
            if ep < self.POSITION_TOL and er < self.ROTATION_TOL:
                break
            J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[rows]
            e = err[rows]
            dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(J.shape[0]), e)
            # Joints at a limit that the step pushes further out are frozen and the step is
            # solved again without them, so the others make up the motion.
            stuck = ((q <= self.lower) & (dq < 0)) | ((q >= self.upper) & (dq > 0))
            if stuck.any():
                J = J * ~stuck
                dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(J.shape[0]), e)
            norm = np.linalg.norm(dq)
            if norm > 0.5:
                dq *= 0.5 / norm
            q = np.clip(q + dq, self.lower, self.upper)
        return q, ep, er


class StationKinematics:
    """Kinematics of both arms, built once from the station URDF."""

    def __init__(self, urdf: str, emb: Embodiment) -> None:
        model = pin.buildModelFromXML(urdf)
        self.arms = {arm: ArmKinematics(model, emb, arm) for arm in ARMS}

    def link6_positions(self, command: np.ndarray) -> list[np.ndarray]:
        """link6 world positions of both arms for a 14-number command (the shield's FK)."""
        return [
            self.arms['left'].fk(command[0:6], 'link6').position,
            self.arms['right'].fk(command[7:13], 'link6').position,
        ]
