"""Add a task's objects (harness_bench.ObjectSpec) to the station's MjSpec."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from arx_x5_description.mujoco_model import WORLD_CONTACT
from harness_bench.task import ObjectSpec
from harness_types.transforms import quat_to_matrix, yaw_quat

OBJECT_FRICTION = [1.0, 0.01, 0.001]
# A contact bit no other geom has: (0, 0) would make the compiler drop the geom as visual-only
# (discardvisual), and the cameras would not see it either.
NO_CONTACT = (8, 0)
MARK_RGBA = [0.05, 0.05, 0.05, 1.0]
TRAY_HANDLE = (0.02, 0.035)  # half extents (x, y) of a tray's handles, at its two y ends
CABINET_WALL = 0.005  # half thickness of a cabinet's walls
SLIDE_DAMPING = 5.0  # N s/m: a drawer glides, it does not coast
HINGE_DAMPING = 0.05  # N m s/rad: a lid or a door swings, slowly, and does not bounce
# Where a box's dots sit on its top face, as fractions of its half size (a die's faces).
_MARK_LAYOUTS = {
    1: [(0.0, 0.0)],
    2: [(-0.5, -0.5), (0.5, 0.5)],
    3: [(-0.5, -0.5), (0.0, 0.0), (0.5, 0.5)],
    4: [(-0.5, -0.5), (-0.5, 0.5), (0.5, -0.5), (0.5, 0.5)],
    5: [(-0.5, -0.5), (-0.5, 0.5), (0.0, 0.0), (0.5, -0.5), (0.5, 0.5)],
    6: [(-0.5, -0.5), (-0.5, 0.0), (-0.5, 0.5), (0.5, -0.5), (0.5, 0.0), (0.5, 0.5)],
}


def add_objects(spec: mujoco.MjSpec, objects: list[ObjectSpec], table_top_z: float) -> None:
    """One body per object, named after it: with a free joint when it is movable, a slide
    joint when it slides in its parent, a hinge joint when it turns on one, none when it is
    fixed (to the table or its parent)."""
    placed: set[str] = set()
    for obj in objects:
        x, y, z = obj.position
        if obj.parent:
            if obj.parent not in placed:
                raise ValueError(f'object {obj.name!r}: its parent {obj.parent!r} must come first')
            body = spec.body(obj.parent).add_body(
                name=obj.name, pos=[x, y, z], quat=list(yaw_quat(obj.yaw))
            )
        else:
            body = spec.worldbody.add_body(
                name=obj.name, pos=[x, y, table_top_z + z], quat=list(yaw_quat(obj.yaw))
            )
        placed.add(obj.name)
        if obj.slide is not None and obj.hinge is not None:
            raise ValueError(f'object {obj.name!r}: it slides or turns on a hinge, not both')
        if obj.hinge is not None:
            _add_hinge(body, obj, degrees=bool(spec.compiler.degree))
        elif obj.slide is not None:
            travel = math.dist(obj.slide, (0.0, 0.0, 0.0))
            if not (obj.movable and travel > 0):
                raise ValueError(f'object {obj.name!r}: only a movable object slides, some way')
            joint = body.add_joint(
                name=f'{obj.name}_slide',
                type=mujoco.mjtJoint.mjJNT_SLIDE,
                axis=[v / travel for v in obj.slide],
                range=[0.0, travel],
                damping=0.0 if obj.speed else SLIDE_DAMPING,
            )
            joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        elif obj.movable and not obj.parent:
            body.add_freejoint(name=f'{obj.name}_free')
        for geom in _geoms(obj):
            g = body.add_geom(**geom)
            g.rgba = list(obj.rgba)
            g.contype, g.conaffinity = WORLD_CONTACT if obj.collide else NO_CONTACT
            g.friction = OBJECT_FRICTION
            g.condim = 4
        for geom in _marks(obj):
            g = body.add_geom(**geom)
            g.rgba = MARK_RGBA
            g.contype, g.conaffinity = NO_CONTACT


def _add_hinge(body, obj: ObjectSpec, degrees: bool) -> None:
    """A damped hinge joint of the object's range, its axis and point given in the parent's
    frame (ObjectSpec.hinge), turned into the body's own (MuJoCo's joint frame); its range in
    the spec's angle unit (`degrees`: the compiler's, a bare MjSpec's default)."""
    try:
        axis, point, (lower, upper) = obj.hinge
        axis = np.array(axis, dtype=float).reshape(3)
        point = np.array(point, dtype=float).reshape(3)
        lower, upper = float(lower), float(upper)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f'object {obj.name!r}: hinge must be (axis [x, y, z], point [x, y, z], '
            f'(lower, upper) rad), not {obj.hinge!r}'
        ) from e
    length = float(np.linalg.norm(axis))
    problems = []
    if not obj.movable:
        problems.append('only a movable object turns on a hinge')
    if not (np.all(np.isfinite(axis)) and length > 1e-9):
        problems.append(f'its axis {axis.tolist()} has no direction')
    if not np.all(np.isfinite(point)):
        problems.append(f'its point {point.tolist()} is not finite')
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= 0.0 <= upper):
        problems.append(f'its range ({lower}, {upper}) must hold 0 (where it stands), lower first')
    elif upper - lower < 1e-6:
        problems.append(f'its range ({lower}, {upper}) has no width')
    elif upper - lower > 2 * math.pi:
        problems.append(f'its range ({lower}, {upper}) turns more than once round')
    if problems:
        raise ValueError(f'object {obj.name!r}: hinge: ' + '; '.join(problems))
    # The body's frame is the parent's moved to the object's position (the point is given as
    # the position is, so the table's height cancels) and turned by its yaw.
    turn = quat_to_matrix(yaw_quat(obj.yaw))
    joint = body.add_joint(
        name=f'{obj.name}_hinge',
        type=mujoco.mjtJoint.mjJNT_HINGE,
        axis=[float(v) for v in turn.T @ (axis / length)],
        pos=[float(v) for v in turn.T @ (point - np.array(obj.position, dtype=float))],
        range=[math.degrees(lower), math.degrees(upper)] if degrees else [lower, upper],
        damping=HINGE_DAMPING,
    )
    joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE


def _marks(obj: ObjectSpec) -> list[dict]:
    """Flat dark dots on a box's top face: seen by the cameras, felt by nothing."""
    if not obj.marks:
        return []
    if obj.shape != 'box' or obj.marks not in _MARK_LAYOUTS:
        raise ValueError(f'object {obj.name!r}: marks need a box and 1..6 dots')
    hx, hy, hz = obj.size
    radius = 0.18 * min(hx, hy)
    return [
        dict(
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[radius, 0.0005, 0],
            pos=[u * hx, v * hy, hz + 0.0005],
            mass=1e-5,
        )
        for u, v in _MARK_LAYOUTS[obj.marks]
    ]


def _geoms(obj: ObjectSpec) -> list[dict]:
    if obj.shape == 'box':
        return [dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(obj.size), mass=obj.mass)]
    if obj.shape == 'cylinder':
        return [
            dict(
                type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                size=[obj.size[0], obj.size[1], 0],
                mass=obj.mass,
            )
        ]
    if obj.shape == 'bowl':
        radius, height, wall = obj.size
        n = 16
        geoms = [
            dict(
                type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                size=[radius, wall / 2, 0],
                pos=[0, 0, wall / 2],
                mass=obj.mass / 2,
            )
        ]
        side = 2 * radius * math.tan(math.pi / n) + wall
        for k in range(n):
            a = 2 * math.pi * k / n
            geoms.append(
                dict(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=[wall / 2, side / 2, height / 2],
                    pos=[
                        (radius - wall / 2) * math.cos(a),
                        (radius - wall / 2) * math.sin(a),
                        height / 2,
                    ],
                    quat=list(yaw_quat(a)),
                    mass=obj.mass / (2 * n),
                )
            )
        return geoms
    if obj.shape == 'socket':
        outer, hole, half_z = obj.size
        wall = (outer - hole) / 2
        geoms = []
        for sign in (-1.0, 1.0):  # four walls around a square hole: two along y, two along x
            for size, pos in (
                ([wall, outer, half_z], [sign * (outer - wall), 0.0, 0.0]),
                ([hole, wall, half_z], [0.0, sign * (outer - wall), 0.0]),
            ):
                geoms.append(
                    dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=size, pos=pos, mass=obj.mass / 4)
                )
        return geoms
    if obj.shape == 'cabinet':
        hx, hy, hz = obj.size
        w = CABINET_WALL
        walls = (  # (half extents, centre): top, bottom, left, right, back; open at -y
            ((hx, hy, w), (0.0, 0.0, hz - w)),
            ((hx, hy, w), (0.0, 0.0, -hz + w)),
            ((w, hy, hz), (-hx + w, 0.0, 0.0)),
            ((w, hy, hz), (hx - w, 0.0, 0.0)),
            ((hx, w, hz), (0.0, hy - w, 0.0)),
        )
        return [
            dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(s), pos=list(p), mass=obj.mass / 5)
            for s, p in walls
        ]
    if obj.shape == 'bin':
        hx, hy, hz = obj.size
        w = CABINET_WALL
        walls = (  # (half extents, centre): bottom, front, back, left, right; open at the top
            ((hx, hy, w), (0.0, 0.0, -hz + w)),
            ((hx, w, hz), (0.0, -hy + w, 0.0)),
            ((hx, w, hz), (0.0, hy - w, 0.0)),
            ((w, hy - 2 * w, hz), (-hx + w, 0.0, 0.0)),
            ((w, hy - 2 * w, hz), (hx - w, 0.0, 0.0)),
        )
        return [
            dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(s), pos=list(p), mass=obj.mass / 5)
            for s, p in walls
        ]
    if obj.shape == 'tray':
        half_x, half_y, half_z = obj.size
        plate = half_y - TRAY_HANDLE[1] * 2
        geoms = [dict(type=mujoco.mjtGeom.mjGEOM_BOX, size=[half_x, plate, half_z], mass=obj.mass)]
        for sign in (-1.0, 1.0):
            geoms.append(
                dict(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=[TRAY_HANDLE[0], TRAY_HANDLE[1], half_z],
                    pos=[0.0, sign * (plate + TRAY_HANDLE[1]), 0.0],
                    mass=obj.mass / 10,
                )
            )
        return geoms
    raise ValueError(
        f'object {obj.name!r} has unknown shape {obj.shape!r} '
        '(box, cylinder, bowl, tray, socket, cabinet, bin)'
    )
