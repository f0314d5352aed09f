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
    failure they are the best the solver reached (for a target beyond the arm's reach, which
    is not searched: how far beyond, and the seed), and `joints` must not be commanded.
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
    MAX_ITERATIONS = 200  # of the solve from the seed
    RESTARTS = 96
    # The restarts run side by side (one batched solve); it stops when one converges, or
    # after this many iterations: a target no start reaches costs ~10 ms, not seconds.
    RESTART_ITERATIONS = 60
    DAMPING = 1e-4
    # A solve gives up when its error fell by less than STALL_GAIN (a fraction) over the last
    # STALL_ITERATIONS iterations while still outside the caller's tolerances.
    STALL_ITERATIONS = 5
    STALL_GAIN = 0.02
    NEAR_MISS_M = 0.02  # restarts that end this close are nudged and solved again
    NUDGED = 8  # how many of them
    NUDGES = 2  # nudged copies of each
    NUDGE_ROUNDS = 1

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
        # Restart seeds are fixed, so IK answers are deterministic (see _restarts).
        rng = np.random.default_rng(0)
        self._seeds = rng.uniform(self.lower, self.upper, size=(self.RESTARTS, 6))
        self._chain = _Chain(self.model, {'link6': self.link6, 'tcp': self.tcp})
        # joint1's origin, and the longest joint6's origin can be from it (_beyond_reach)
        self._shoulder = self._chain.offsets[0]
        self._reach = float(np.linalg.norm(self._chain.offsets[1:], axis=1).sum())

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

    def link6_position(self, q: np.ndarray) -> np.ndarray:
        """World position of link6: fk(q, 'link6').position, placing only that frame (the
        shield asks on every command)."""
        pin.forwardKinematics(self.model, self.data, np.asarray(q, dtype=float))
        return pin.updateFramePlacement(self.model, self.data, self.link6).translation.copy()

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

        Damped least squares from `seed` (default: all zeros); if that fails, from fixed restart
        seeds side by side, for a bounded number of iterations.
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
        what = 'position' if target_r is None else 'pose'
        beyond = self._beyond_reach(frame, target_p, target_r, position_tol, rotation_tol)
        if beyond > 0.0:
            return IKResult(
                False,
                first,
                beyond,
                0.0,
                f'{self.arm} arm cannot reach the {what}: '
                f'{beyond * 1000:.0f} mm beyond the reach of its links',
            )
        # From the seed first: a program's moves start near where the arm is, and this solve
        # nearly always succeeds (every solve of the scripted bench did).
        q, ep, er = self._solve(fid, target_p, target_r, first, (position_tol, rotation_tol))
        if ep <= position_tol and er <= rotation_tol:
            return IKResult(True, q, ep, er)
        starts = np.array(list(self._restarts(target_p)))
        accept = (position_tol, rotation_tol)
        qs, eps, ers = self._solve_side_by_side(frame, target_p, target_r, starts, accept)
        good = np.flatnonzero((eps <= position_tol) & (ers <= rotation_tol))
        rng = np.random.default_rng(1)
        for _ in range(self.NUDGE_ROUNDS):
            near = np.flatnonzero(eps <= self.NEAR_MISS_M)
            if good.size or not near.size:
                break
            # A near miss is usually a joint resting on its limit: nudge the closest ones off.
            closest = near[np.argsort(eps[near] + 0.1 * ers[near])[: self.NUDGED]]
            nudged = np.repeat(qs[closest], self.NUDGES, axis=0)
            nudged = np.clip(nudged + rng.normal(0.0, 0.3, nudged.shape), self.lower, self.upper)
            more = self._solve_side_by_side(frame, target_p, target_r, nudged, accept)
            qs, eps, ers = (
                np.concatenate([a, b]) for a, b in zip((qs, eps, ers), more, strict=True)
            )
            good = np.flatnonzero((eps <= position_tol) & (ers <= rotation_tol))
        if good.size:
            k = good[np.argmin(eps[good] + 0.1 * ers[good])]
            return IKResult(True, qs[k], float(eps[k]), float(ers[k]))
        k = int(np.argmin(eps + 0.1 * ers))
        if eps[k] + 0.1 * ers[k] < ep + 0.1 * er:
            q, ep, er = qs[k], float(eps[k]), float(ers[k])
        return IKResult(
            False,
            q,
            ep,
            er,
            f'{self.arm} arm cannot reach the {what} within joint limits '
            f'(closest: {ep * 1000:.1f} mm, {np.degrees(er):.1f} deg away)',
        )

    def _beyond_reach(
        self,
        frame: str,
        target_p: np.ndarray,
        target_r: np.ndarray | None,
        position_tol: float,
        rotation_tol: float,
    ) -> float:
        """How far (m) the target lies beyond what any joints could reach, else 0: joint6's
        origin is never further from joint1's than the sum of the links between them (the
        triangle inequality), so no search is needed to fail such a target. With a rotation,
        joint6's origin follows from the target pose; the tolerances widen the bound by what
        they would let joint6 move."""
        r_frame, t_frame = self._chain.frames[frame]
        if target_r is None:
            wrist, slack = target_p, float(np.linalg.norm(t_frame))
        else:
            wrist = target_p - target_r @ r_frame.T @ t_frame
            slack = float(np.linalg.norm(t_frame)) * rotation_tol
        distance = float(np.linalg.norm(wrist - self._shoulder))
        return max(0.0, distance - self._reach - slack - position_tol)

    def _restarts(self, target_p: np.ndarray) -> Iterator[np.ndarray]:
        """Where the solve starts again when the seed's solve fails."""
        local = self._base.rotation.T @ (target_p - self._base.translation)
        yaw = float(np.clip(np.arctan2(local[1], local[0]), self.lower[0], self.upper[0]))
        # Shoulder and elbow decide the branch; a coarse grid of them, turned toward the target,
        # escapes the local minima where an elbow rests on its limit.
        for j2 in (0.4, 1.2, 2.0, 2.8):
            for j3 in (0.4, 1.2, 2.0, 2.8):
                yield np.array([yaw, j2, j3, 0.0, 0.0, 0.0])
        yield from self._seeds

    def _solve(
        self,
        fid: int,
        target_p: np.ndarray,
        target_r: np.ndarray | None,
        q: np.ndarray,
        accept: tuple[float, float] = (0.0, 0.0),
    ) -> tuple[np.ndarray, float, float]:
        """Damped least squares from `q`. Gives up early when the error is outside `accept`
        (position m, rotation rad) and has stopped falling: stuck in a local minimum."""
        model, data = self.model, self.data
        q = q.copy()
        rows = slice(0, 6) if target_r is not None else slice(0, 3)
        damping = self.DAMPING
        ep = er = np.inf
        scores: list[float] = []
        for i in range(self.MAX_ITERATIONS):
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
            scores.append(ep + 0.1 * er)
            if (
                i >= self.STALL_ITERATIONS
                and (ep > accept[0] or er > accept[1])
                and scores[-1] > (1.0 - self.STALL_GAIN) * scores[-1 - self.STALL_ITERATIONS]
            ):
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

    def _solve_side_by_side(
        self,
        frame: str,
        target_p: np.ndarray,
        target_r: np.ndarray | None,
        starts: np.ndarray,
        accept: tuple[float, float],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """_solve from every start at once: stops when one start has converged, drops the
        starts that stall outside `accept`. Returns the joints and both errors of each start."""
        q = starts.copy()
        n = len(q)
        rows = 6 if target_r is not None else 3
        eye = self.DAMPING * np.eye(rows)
        ep, er = np.full(n, np.inf), np.full(n, np.inf)
        scores: list[np.ndarray] = []
        active = np.arange(n)
        for i in range(self.RESTART_ITERATIONS):
            qa = q[active]
            rot, pos, jac = self._chain.kinematics(qa, frame)
            err = np.zeros((len(qa), 6))
            err[:, :3] = target_p - pos
            if target_r is not None:
                err[:, 3:] = (rot @ _log3(rot.transpose(0, 2, 1) @ target_r)[:, :, None])[..., 0]
            ep[active] = np.linalg.norm(err[:, :3], axis=1)
            er[active] = np.linalg.norm(err[:, 3:], axis=1)
            if ((ep < self.POSITION_TOL) & (er < self.ROTATION_TOL)).any():
                return q, ep, er
            scores.append(ep + 0.1 * er)
            if i >= self.STALL_ITERATIONS:
                stalled = ((ep > accept[0]) | (er > accept[1])) & (
                    scores[-1] > (1.0 - self.STALL_GAIN) * scores[-1 - self.STALL_ITERATIONS]
                )
                keep = ~stalled[active]
                if not keep.any():
                    return q, ep, er
                active, qa, jac, err = active[keep], qa[keep], jac[keep], err[keep]
            j, e = jac[:, :rows], err[:, :rows, None]
            dq = _dls_step(j, e, eye)
            stuck = ((qa <= self.lower) & (dq < 0)) | ((qa >= self.upper) & (dq > 0))
            again = stuck.any(axis=1)
            if again.any():
                dq[again] = _dls_step(j[again] * ~stuck[again][:, None, :], e[again], eye)
            norm = np.linalg.norm(dq, axis=1, keepdims=True)
            dq *= np.minimum(1.0, 0.5 / np.maximum(norm, 1e-12))
            q[active] = np.clip(qa + dq, self.lower, self.upper)
        rot, pos, _ = self._chain.kinematics(q[active], frame)
        ep[active] = np.linalg.norm(target_p - pos, axis=1)
        if target_r is not None:
            er[active] = np.linalg.norm(_log3(rot.transpose(0, 2, 1) @ target_r), axis=1)
        return q, ep, er


_AXES = {'JointModelRX': (1.0, 0.0, 0.0), 'JointModelRY': (0.0, 1.0, 0.0)}
_AXES['JointModelRZ'] = (0.0, 0.0, 1.0)


def _dls_step(j: np.ndarray, e: np.ndarray, eye: np.ndarray) -> np.ndarray:
    """Damped least-squares steps (n, 6) for Jacobians j (n, rows, 6) and errors e (n, rows, 1)."""
    jt = j.transpose(0, 2, 1)
    return (jt @ np.linalg.solve(j @ jt + eye, e))[..., 0]


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _log3(r: np.ndarray) -> np.ndarray:
    """Rotation vectors (n, 3) of rotation matrices (n, 3, 3)."""
    cos = np.clip((np.trace(r, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    v = np.stack([r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0], r[:, 1, 0] - r[:, 0, 1]], 1)
    sin = np.sin(angle)
    small = sin < 1e-6
    scale = np.where(small, 0.5, angle / (2.0 * np.where(small, 1.0, sin)))
    out = v * scale[:, None]
    # Near a half turn the skew part vanishes: the axis is the column of (R + I) / 2 with the
    # largest diagonal entry.
    flip = small & (cos < 0.0)
    if flip.any():
        rf = r[flip]
        sym = (rf + np.eye(3)) / 2.0
        col = np.argmax(np.diagonal(sym, axis1=1, axis2=2), axis=1)
        axis = sym[np.arange(len(rf)), :, col]
        axis /= np.linalg.norm(axis, axis=1, keepdims=True)
        out[flip] = axis * angle[flip][:, None]
    return out


class _Chain:
    """Forward kinematics and Jacobians of the arm as a serial chain of revolute joints, for
    many joint vectors at once (numpy): IK restarts run side by side, not one after another."""

    def __init__(self, model: pin.Model, frames: dict[str, int]) -> None:
        # Per joint: the translation from its parent's frame, its axis in the parent's frame,
        # and F, F K, F K^2 (F its fixed rotation, K the skew matrix of its axis): the joint's
        # rotation at angle q is F (I + sin q K + (1 - cos q) K^2).
        offsets, axes, f, fk, fk2 = [], [], [], [], []
        for j in range(1, model.njoints):
            if model.parents[j] != j - 1:
                raise ValueError('the arm model is not a serial chain')
            kind = model.joints[j].shortname()
            if kind not in _AXES:
                raise ValueError(f'joint {model.names[j]} is a {kind}: only revolute x/y/z')
            placement = model.jointPlacements[j]
            rotation, axis = placement.rotation.copy(), np.array(_AXES[kind])
            k = _skew(axis)
            offsets.append(placement.translation.copy())
            axes.append(rotation @ axis)
            f.append(rotation)
            fk.append(rotation @ k)
            fk2.append(rotation @ k @ k)
        self.offsets, self.axes = np.array(offsets), np.array(axes)
        self.f, self.fk, self.fk2 = np.array(f), np.array(fk), np.array(fk2)
        self.frames = {}
        for name, fid in frames.items():
            frame = model.frames[fid]
            if frame.parentJoint != model.njoints - 1:
                raise ValueError(f'frame {name} is not on the last joint')
            self.frames[name] = (
                frame.placement.rotation.copy(),
                frame.placement.translation.copy(),
            )

    def kinematics(self, q: np.ndarray, frame: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World rotation (n, 3, 3) and position (n, 3) of `frame`, and the Jacobian (n, 6, 6)
        (linear rows, then angular; world-aligned at the frame) for joint vectors q (n, 6)."""
        n = len(q)
        sin, vers = np.sin(q)[..., None, None], (1.0 - np.cos(q))[..., None, None]
        local = self.f + sin * self.fk + vers * self.fk2  # (n, 6, 3, 3): each joint's placement
        rots = np.empty((n, 7, 3, 3))
        rots[:, 0] = np.eye(3)
        for j in range(6):
            rots[:, j + 1] = rots[:, j] @ local[:, j]
        parents = rots[:, :6]  # each joint's parent frame
        origins = np.cumsum((parents @ self.offsets[..., None])[..., 0], axis=1)  # (n, 6, 3)
        z = (parents @ self.axes[..., None])[..., 0]  # (n, 6, 3): joint axes in the world
        r_frame, p_frame = self.frames[frame]
        pos = origins[:, -1] + rots[:, 6] @ p_frame
        rot = rots[:, 6] @ r_frame
        lever = pos[:, None, :] - origins
        jac = np.empty((n, 6, 6))
        # z x lever, written out (np.cross costs several times more)
        jac[:, 0] = z[..., 1] * lever[..., 2] - z[..., 2] * lever[..., 1]
        jac[:, 1] = z[..., 2] * lever[..., 0] - z[..., 0] * lever[..., 2]
        jac[:, 2] = z[..., 0] * lever[..., 1] - z[..., 1] * lever[..., 0]
        jac[:, 3:] = z.transpose(0, 2, 1)
        return rot, pos, jac


class StationKinematics:
    """Kinematics of both arms, built once from the station URDF."""

    def __init__(self, urdf: str, emb: Embodiment) -> None:
        model = pin.buildModelFromXML(urdf)
        self.arms = {arm: ArmKinematics(model, emb, arm) for arm in ARMS}

    def link6_positions(self, command: np.ndarray) -> list[np.ndarray]:
        """link6 world positions of both arms for a 14-number command (the shield's FK)."""
        return [
            self.arms['left'].link6_position(command[0:6]),
            self.arms['right'].link6_position(command[7:13]),
        ]
