"""The MuJoCo model of the station, generated from the station URDF (not a hand-kept twin).

MuJoCo's URDF importer gives the bodies, joints (the gripper mimic becomes a joint equality),
collision geometry and inertias. This module adds what a URDF cannot say: position actuators
with the sim gains, gravity compensation, the gripper actuator range that lets a closed gripper
squeeze, the three cameras at the URDF's camera frames, contact filtering, lights and the floor.
Bench tasks add their objects to the returned spec before compiling.
"""

from __future__ import annotations

import re

import mujoco
import numpy as np

from arx_x5_description.embodiment import ARMS, Embodiment

# Contact bits: an arm's geoms touch the world (table, objects) and the other arm, not each
# other; world geoms touch everything. A geom pair collides when (contype_a & conaffinity_b) or
# (contype_b & conaffinity_a).
ARM_CONTACT = {'left': (2, 1 | 4), 'right': (4, 1 | 2)}
WORLD_CONTACT = (1, 1 | 2 | 4)

# A URDF camera frame is x forward, z up; a MuJoCo camera looks along its -z with y up.
_ROS_TO_MUJOCO_CAMERA = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])

_MUJOCO_COMPILER = (
    '<mujoco><compiler fusestatic="false" discardvisual="true" balanceinertia="true"'
    ' autolimits="true" angle="radian"/></mujoco>'
)


def _camera_quat() -> list[float]:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, _ROS_TO_MUJOCO_CAMERA.flatten())
    return quat.tolist()


def _urdf_for_mujoco(urdf: str) -> str:
    urdf = re.sub(r'<!--.*?-->', '', urdf, flags=re.S)
    urdf = re.sub(r'<ros2_control.*?</ros2_control>', '', urdf, flags=re.S)
    urdf = re.sub(r'<gazebo>.*?</gazebo>', '', urdf, flags=re.S)
    head = re.search(r'<robot[^>]*>', urdf)
    if head is None:
        raise ValueError('not a URDF: no <robot> element')
    return urdf[: head.end()] + _MUJOCO_COMPILER + urdf[head.end() :]


def station_spec(emb: Embodiment, urdf: str | None = None) -> mujoco.MjSpec:
    """The station as an editable MjSpec (tasks add objects, then `compile()`)."""
    if urdf is None:
        from arx_x5_description.urdf import station_urdf

        urdf = station_urdf(config=emb.path)
    spec = mujoco.MjSpec.from_string(_urdf_for_mujoco(urdf))
    spec.modelname = emb.robot
    spec.option.timestep = 1.0 / emb.rates.physics_hz
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    spec.visual.global_.offwidth = max(c.width for c in emb.cameras.values())
    spec.visual.global_.offheight = max(c.height for c in emb.cameras.values())
    spec.visual.quality.shadowsize = 0
    spec.visual.quality.offsamples = emb.sim.msaa_samples

    g = emb.gripper
    finger_bodies = {f'{arm}_link{n}' for arm in ARMS for n in (7, 8)}
    for body in spec.bodies:
        if body.name.startswith(ARMS):
            body.gravcomp = 1.0
            for geom in body.geoms:
                geom.contype, geom.conaffinity = ARM_CONTACT[body.name.split('_')[0]]
                geom.rgba = [0.22, 0.22, 0.25, 1.0]
                if body.name in finger_bodies:
                    geom.friction = list(emb.sim.finger_friction)
                    geom.condim = 4
                    geom.rgba = [0.1, 0.1, 0.1, 1.0]
        elif body.name == 'table':
            for geom in body.geoms:
                geom.contype, geom.conaffinity = WORLD_CONTACT
                geom.rgba = [0.62, 0.5, 0.38, 1.0]

    for arm in ARMS:
        spec.add_exclude(bodyname1=f'{arm}_link7', bodyname2=f'{arm}_link8')
        for name, kp, damping in zip(
            emb.arm_joint_names(arm), emb.sim.kp, emb.sim.damping, strict=True
        ):
            joint = spec.joint(name)
            joint.damping = [damping, 0.0, 0.0]
            joint.armature = emb.sim.armature
            act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=kp)
            joint_limit = next(j for j in emb.joints if name.endswith(j.name))
            act.ctrlrange = [joint_limit.lower, joint_limit.upper]
            act.ctrllimited = True
        finger = f'{arm}_{g.joint}'
        act = spec.add_actuator(
            name=f'{arm}_gripper', target=finger, trntype=mujoco.mjtTrn.mjTRN_JOINT
        )
        act.set_to_position(kp=emb.sim.gripper_kp)
        act.ctrlrange = [g.actuator_lower, g.upper]
        act.ctrllimited = True
        act.forcerange = [-emb.sim.gripper_force, emb.sim.gripper_force]
        act.forcelimited = True
        spec.body(f'{arm}_tcp').add_site(name=f'{arm}_tcp', size=[0.005, 0, 0], rgba=[1, 0, 0, 0.5])

    quat = _camera_quat()
    for cam in emb.cameras.values():
        camera = spec.body(cam.name).add_camera(name=cam.name, quat=quat, fovy=cam.fovy_deg)
        camera.resolution = [cam.width, cam.height]

    world = spec.worldbody
    world.add_geom(
        name='floor',
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[3, 3, 0.1],
        rgba=[0.35, 0.37, 0.4, 1],
        contype=WORLD_CONTACT[0],
        conaffinity=WORLD_CONTACT[1],
    )
    world.add_light(
        name='key',
        pos=[0.0, -0.5, 2.5],
        dir=[0.0, 0.2, -1.0],
        diffuse=[0.8, 0.8, 0.8],
        castshadow=False,
    )
    world.add_light(
        name='fill',
        pos=[1.0, 1.0, 2.0],
        dir=[-0.4, -0.4, -1.0],
        diffuse=[0.3, 0.3, 0.3],
        castshadow=False,
    )
    return spec


def station_model(emb: Embodiment, urdf: str | None = None) -> mujoco.MjModel:
    """The compiled station without task objects."""
    return station_spec(emb, urdf).compile()
