"""The `mujoco` worker backend: the embedded simulator's station (physics, the RoboDojo
interpolation, state, rendering, collision checks). No ROS here.

One `load()` builds the station plus a task's objects; `apply()` advances one control tick:
the command is reached by linear interpolation from the measured joints over the first
`interpolation_steps` physics steps, then held for the rest of the tick.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import mujoco
import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment
from arx_x5_description.mujoco_model import station_spec
from harness_bench.randomization import NO_VARIATION, SceneVariation
from harness_bench.task import ArmSnapshot, ObjectSpec, ObjectState, WorldSnapshot
from harness_shield.shield import Contacts
from harness_types.camera import CameraView
from harness_types.robot_state import ArmState, RobotState
from harness_types.transforms import matrix_to_quat

from harness_worker.mujoco_scene import add_objects
from harness_worker.scene_variation import apply_to_spec

NO_CONTACT = Contacts((0.0,) * len(ARMS), 0.0)
# MuJoCo camera (looks along -z, y up) to optical frame (z forward, y down).
_MJ_TO_OPTICAL = np.diag([1.0, -1.0, -1.0])


def _slice_of(indices: np.ndarray) -> slice | np.ndarray:
    """The same indices as a slice when they are consecutive and ascending, else as they are."""
    first = int(indices[0])
    if np.array_equal(indices, np.arange(first, first + len(indices))):
        return slice(first, first + len(indices))
    return indices


# What mjr_makeContext and mjv_makeScene read of a model, with room to spare (read in MuJoCo
# 3.12's source; `test_worker_core.py` compares the views with a new renderer's on the pinned
# version): its visual settings, its extent and centre, every plane geom's size and material
# in order (each plane's grid is drawn from them) and every mesh, texture, height field, skin,
# flex, flex edge and material array (a scene is sized by the skins and flexes).
_CONTEXT_ARRAYS = ('mesh_', 'tex_', 'hfield_', 'skin_', 'flex_', 'flexedge_', 'mat_')


def render_context_key(model: mujoco.MjModel) -> bytes:
    """A digest of everything a model's MjrContext and MjvScene are made from: two models with
    the same key get the same context (display lists, buffers, textures) and a scene of the
    same size, so a renderer keeps both from one to the other. What else a render draws (the
    geoms other than planes, the lights, the cameras) mjv_updateScene reads for each render."""
    digest = hashlib.blake2b(digest_size=16)

    def add(name: str, value) -> None:
        array = np.ascontiguousarray(value)
        digest.update(f'{name}:{array.dtype}:{array.shape};'.encode())
        digest.update(array.tobytes())

    for group in ('global_', 'quality', 'headlight', 'map', 'scale', 'rgba'):
        settings = getattr(model.vis, group)
        for field in sorted(a for a in dir(settings) if not a.startswith('_')):
            add(f'vis.{group}.{field}', getattr(settings, field))
    for field in ('center', 'extent'):  # (its masses and sizes are the physics' and the scene's)
        add(f'stat.{field}', getattr(model.stat, field))
    planes = np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)
    add('plane.size', model.geom_size[planes])
    add('plane.matid', model.geom_matid[planes])
    for field in sorted(a for a in dir(model) if a.startswith(_CONTEXT_ARRAYS)):
        value = getattr(model, field)
        if isinstance(value, np.ndarray):
            add(field, value)
    return digest.digest()


def make_station(emb: Embodiment, urdf: str, node=None) -> MujocoStation:
    return MujocoStation(emb, urdf)


class MujocoStation:
    """The simulated station with one task's objects."""

    backend = 'mujoco'
    simulated = True

    def __init__(self, emb: Embodiment, urdf: str) -> None:
        self.emb = emb
        self.urdf = urdf
        self.model: mujoco.MjModel | None = None
        self.data: mujoco.MjData | None = None
        self.objects: list[ObjectSpec] = []
        self.table_top_z = emb.table_top_z  # the episode's (a scene variation moves it)
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        # (height, width) -> the render_context_key of the model its renderer's context is for
        self._context_keys: dict[tuple[int, int], bytes] = {}
        # camera -> (scene, its last view); read and written on the GL thread only
        self._views: dict[str, tuple[tuple, CameraView]] = {}
        self._frames: list[mujoco.MjData] = []  # copies of the scene for render_later, reused
        # Cameras see what a real camera would: no sites (the TCP markers are for viewers).
        self._camera_option = mujoco.MjvOption()
        self._camera_option.sitegroup[:] = 0
        # A GL context is current in one thread at a time: every renderer is created, used and
        # freed on this one thread, whichever thread asks for an image.
        self._gl = ThreadPoolExecutor(max_workers=1, thread_name_prefix='mujoco-gl')

    # Loading ------------------------------------------------------------------------------

    def load(self, objects: list[ObjectSpec], variation: SceneVariation = NO_VARIATION) -> None:
        """Build the station with `objects` and the scene `variation`, arms at zero and
        grippers open."""
        self._forget_views()  # of the old model (and every render asked for is done)
        spec = station_spec(self.emb, self.urdf)
        apply_to_spec(spec, variation, list(self.emb.cameras))
        self.table_top_z = self.emb.table_top_z + variation.table_offset_m
        add_objects(spec, objects, self.table_top_z)
        self.model = spec.compile()
        self._gl.submit(self._rebind_renderers).result()
        self.data = mujoco.MjData(self.model)
        self._scratch = mujoco.MjData(self.model)  # collision checks for planning
        self.objects = list(objects)
        m = self.model
        self._arm_qpos = {
            a: np.array([m.joint(n).qposadr[0] for n in self.emb.arm_joint_names(a)]) for a in ARMS
        }
        self._arm_dof = {
            a: np.array([m.joint(n).dofadr[0] for n in self.emb.arm_joint_names(a)]) for a in ARMS
        }
        g = self.emb.gripper
        self._finger_qpos = {a: m.joint(f'{a}_{g.joint}').qposadr[0] for a in ARMS}
        self._mimic_qpos = {a: m.joint(f'{a}_{g.mimic_joint}').qposadr[0] for a in ARMS}
        self._act = {a: [m.actuator(n).id for n in self.emb.arm_joint_names(a)] for a in ARMS}
        self._grip_act = {a: m.actuator(f'{a}_gripper').id for a in ARMS}
        self._arm_bodies = {
            a: {b for b in range(m.nbody) if m.body(b).name.startswith(f'{a}_')} for a in ARMS
        }
        self._finger_bodies = {a: (m.body(f'{a}_link7').id, m.body(f'{a}_link8').id) for a in ARMS}
        # Ids, not names: a named view (data.body(name)) costs microseconds, and the state
        # and the task's snapshot are read every tick.
        self._link6_body = {a: m.body(f'{a}_link6').id for a in ARMS}
        self._tcp_site = {a: m.site(f'{a}_tcp').id for a in ARMS}
        self._object_bodies = {o.name: m.body(o.name).id for o in objects}
        self._object_of_body = {b: name for name, b in self._object_bodies.items()}
        self._buttons = {self._object_bodies[o.name]: o for o in objects if o.latch_force > 0}
        self._all_arm_bodies = set().union(*self._arm_bodies.values())
        self._held: dict[str, tuple[tuple[bytes, bytes], tuple[str, ...]]] = {}  # _holding's

        # Body id -> bool tables: the contact tests of every tick index them (np.isin on the
        # same sets cost half a tick).
        def body_mask(bodies) -> np.ndarray:
            mask = np.zeros(m.nbody, dtype=bool)
            mask[list(bodies)] = True
            return mask

        self._finger_mask = {a: body_mask(self._finger_bodies[a]) for a in ARMS}
        self._arm_mask = {a: body_mask(self._arm_bodies[a]) for a in ARMS}
        self._any_arm_mask = body_mask(self._all_arm_bodies)
        geom_body = m.geom_bodyid
        self._arm_geoms = {a: np.isin(geom_body, list(self._arm_bodies[a])) for a in ARMS}
        table = m.body('table').id
        self._table_geoms = (geom_body == table) | (
            np.arange(m.ngeom) == mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, 'floor')
        )
        # The shield's collision depths (contacts) concern only the arms and the table: in the
        # probe's copy of the model nothing else collides, so objects resting on the table or
        # on each other cost no collision work on every check. The pairs it does test collide
        # exactly as in the station's model.
        self._probe_model = copy.deepcopy(m)
        bystanders = ~(self._arm_geoms['left'] | self._arm_geoms['right'] | self._table_geoms)
        self._probe_model.geom_contype[bystanders] = 0
        self._probe_model.geom_conaffinity[bystanders] = 0
        self._probe = mujoco.MjData(self._probe_model)
        # Where each arm's six joints of a command go in qpos: a slice where they are
        # consecutive (they are in the station's model; a slice's copy costs a fifth of a
        # fancy index's, and the shield asks on every command).
        self._probe_arm_qpos = [_slice_of(self._arm_qpos[a]) for a in ARMS]
        self.latched: set[str] = set()
        self.latch_order: list[str] = []
        self.grasped: set[str] = set()
        for a in ARMS:
            self.data.qpos[self._finger_qpos[a]] = g.upper
            self.data.qpos[self._mimic_qpos[a]] = g.upper
        self.data.ctrl[:] = self._ctrl_for(self.measured())
        for o in objects:  # what moves at the start (a conveyor's sled)
            if o.slide is not None and o.speed:
                self.data.qvel[m.joint(f'{o.name}_slide').dofadr[0]] = o.speed
        mujoco.mj_forward(m, self.data)
        self.home = {a: self._tcp_pose(a) for a in ARMS}
        self._start_z = {
            o.name: float(self.data.xpos[self._object_bodies[o.name]][2]) for o in objects
        }

    def _forget_views(self) -> None:
        """Drop the kept views and scene copies, once every render asked for is done."""

        def forget() -> None:
            self._views.clear()
            self._frames.clear()

        self._gl.submit(forget).result()

    def _rebind_renderers(self) -> None:
        """Each renderer draws the new model from now on, in the GL context it has (on the GL
        thread): a new context's first draw cost ~65 ms on llvmpipe, an episode's start with
        a warm station. The model's MjrContext and MjvScene are made as mujoco.Renderer makes
        them, unless the renderer's were made from a model with the same render_context_key:
        then it keeps them (~5 ms for a context and ~14 ms for a scene of 10000 geoms here,
        a renderer). A test compares the views with a new renderer's, bit for bit."""
        key = render_context_key(self.model)
        for size, renderer in self._renderers.items():
            if self._context_keys.get(size) != key:
                # No key for a freed context, should a new one fail to be made
                self._context_keys.pop(size, None)
                with renderer._gl_context.as_current():
                    renderer._mjr_context.free()
                    context = mujoco.MjrContext(
                        self.model, mujoco.mjtFontScale.mjFONTSCALE_150.value
                    )
                    mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, context)
                    context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
                renderer._mjr_context = context
                renderer._scene = mujoco.MjvScene(model=self.model, maxgeom=10000)
                self._context_keys[size] = key
            else:
                # Camera positions at zero, as in a new scene: mjv_updateScene centres an
                # infinite plane's grid on the last update's camera before it sets this one.
                for camera in renderer._scene.camera:
                    camera.pos[:] = 0.0
            renderer._model = self.model
            renderer._depth_rendering = renderer._segmentation_rendering = False

    def close_renderers(self) -> None:
        """Free the renderers' GL contexts now, on the GL thread: left to the garbage collector,
        a context may be destroyed from another thread mid-render and hang EGL. Every render
        asked for before is done when this returns."""

        def close() -> None:
            for renderer in self._renderers.values():
                renderer.close()
            self._renderers.clear()
            self._context_keys.clear()
            self._views.clear()
            self._frames.clear()

        self._gl.submit(close).result()

    def recolour(self, geoms, rgba) -> None:
        """Give `geoms` (an index or mask of the model's geoms) the colour `rgba`, once the
        renders asked for before are done: render_later's renders read the model's colours
        when they run, and must see the scene as it was when they were asked for."""
        self._gl.submit(lambda: None).result()
        self.model.geom_rgba[geoms] = rgba

    def close(self) -> None:
        self.close_renderers()
        self._gl.shutdown()

    def _ctrl_for(self, command: np.ndarray) -> np.ndarray:
        ctrl = np.zeros(self.model.nu)
        for k, a in enumerate(ARMS):
            ctrl[self._act[a]] = command[7 * k : 7 * k + 6]
            ctrl[self._grip_act[a]] = self.emb.gripper.target(command[7 * k + 6])
        return ctrl

    # Stepping -----------------------------------------------------------------------------

    def measured(self) -> np.ndarray:
        """Measured state in the command layout: joints and gripper open fractions (14)."""
        out = np.empty(14)
        for k, a in enumerate(ARMS):
            out[7 * k : 7 * k + 6] = self.data.qpos[self._arm_qpos[a]]
            out[7 * k + 6] = self.emb.gripper.open_fraction(self.data.qpos[self._finger_qpos[a]])
        return out

    def apply(self, command: np.ndarray) -> None:
        """One control tick: interpolate from the measured state to `command`, then hold."""
        rates = self.emb.rates
        start = self._ctrl_for(self.measured())
        # The gripper starts from its measured finger position, not from the open fraction's
        # clipped image, so a squeezing gripper keeps squeezing.
        for a in ARMS:
            start[self._grip_act[a]] = self.data.qpos[self._finger_qpos[a]]
        target = self._ctrl_for(np.asarray(command, dtype=float))
        steps = rates.physics_steps_per_tick
        alphas = [min(1.0, k / rates.interpolation_steps) for k in range(1, steps + 1)]
        # every step's controls at once: the same products and sums, element by element, as
        # start + alpha * (target - start) step by step
        controls = start + np.array(alphas)[:, None] * (target - start)
        ctrl = self.data.ctrl
        for k in range(steps):
            ctrl[:] = controls[k]
            mujoco.mj_step(self.model, self.data)
        self._track_contacts()

    def _track_contacts(self) -> None:
        """Once a tick: latch buttons pressed hard enough; remember what was ever grasped (held
        by both fingers and raised 1 cm above where it started: closed fingertips pushing a cube
        touch it with both fingers too)."""
        m, d = self.model, self.data
        contact = self._contact_bodies()
        for a in ARMS:
            for name in self._holding(a, contact):
                if d.xpos[self._object_bodies[name]][2] > self._start_z[name] + 0.01:
                    self.grasped.add(name)
        if not self._buttons:
            return
        b1, b2 = contact
        arm1, arm2 = self._any_arm_mask[b1], self._any_arm_mask[b2]
        force: dict[int, float] = {}
        for button in self._buttons:
            pressed = ((b1 == button) & arm2) | ((b2 == button) & arm1)
            if pressed.any():
                force[button] = self._normal_force(np.flatnonzero(pressed))
        for body, f in force.items():
            obj = self._buttons[body]
            if f >= obj.latch_force and obj.name not in self.latched:
                self.latched.add(obj.name)
                self.latch_order.append(obj.name)
                if obj.latched_rgba is not None:
                    self.recolour(m.geom_bodyid == body, obj.latched_rgba)

    @contextlib.contextmanager
    def rollout(self) -> Iterator[MujocoStation]:
        """Inside: the station is a copy to roll forward (apply, state, render act on it). On
        exit it is exactly as it was: MuJoCo's state, the latched buttons and their colours,
        what was ever grasped (the world-model stand-in)."""
        live, latched, grasped = self.data, set(self.latched), set(self.grasped)
        order = list(self.latch_order)
        rgba = self.model.geom_rgba.copy()
        self.data = copy.copy(live)
        try:
            yield self
        finally:
            self.data, self.latched, self.grasped = live, latched, grasped
            self.latch_order = order
            if not np.array_equal(self.model.geom_rgba, rgba):
                self.recolour(slice(None), rgba)

    @property
    def time(self) -> float:
        return float(self.data.time)

    # State --------------------------------------------------------------------------------

    def _tcp_pose(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        site = self._tcp_site[arm]
        return self.data.site_xpos[site].copy(), self.data.site_xmat[site].reshape(3, 3).copy()

    def state(self, step: int) -> RobotState:
        d = self.data
        contact = self._contact_bodies()
        arms = {}
        for a in ARMS:
            link6 = self._link6_body[a]
            tcp_p, tcp_r = self._tcp_pose(a)
            finger = float(d.qpos[self._finger_qpos[a]])
            arms[a] = ArmState(
                name=a,
                joints=d.qpos[self._arm_qpos[a]],  # indexing with an array copies
                gripper=self.emb.gripper.open_fraction(finger),
                tcp_position=tcp_p,
                tcp_quat=matrix_to_quat(tcp_r),
                link6_position=d.xpos[link6].copy(),
                link6_quat=d.xquat[link6].copy(),
                velocities=d.qvel[self._arm_dof[a]],
                grip_force=self._grip_force(a, contact),
                contact_force=self._contact_force(a, contact),
                fingers=(finger, float(d.qpos[self._mimic_qpos[a]])),
            )
        return RobotState(arms['left'], arms['right'], step, self.time)

    def _contact_bodies(self) -> tuple[np.ndarray, np.ndarray]:
        """Body ids of the two sides of every active contact. Vectorised: grip force, holding
        and the latch/grasp tracking read the contacts every tick, and a Python loop over the
        ~150 contacts of a busy table cost a quarter of a tick."""
        n, m, d = self.data.ncon, self.model, self.data
        return m.geom_bodyid[d.contact.geom1[:n]], m.geom_bodyid[d.contact.geom2[:n]]

    def _normal_force(self, contacts: np.ndarray) -> float:
        """Total normal force (N) of the contacts with these indices."""
        wrench = np.zeros(6)
        total = 0.0
        for i in contacts.tolist():
            mujoco.mj_contactForce(self.model, self.data, i, wrench)
            total += abs(wrench[0])
        return total

    def grip_force(self, arm: str) -> float:
        """Total normal contact force (N) on `arm`'s fingers from bodies not of that arm."""
        return self._grip_force(arm, self._contact_bodies())

    def _grip_force(self, arm: str, contact: tuple[np.ndarray, np.ndarray]) -> float:
        b1, b2 = contact
        fingers, mine = self._finger_mask[arm], self._arm_mask[arm]
        on_finger = (fingers[b1] & ~mine[b2]) | (fingers[b2] & ~mine[b1])
        return float(self._normal_force(np.flatnonzero(on_finger)))

    def _contact_force(self, arm: str, contact: tuple[np.ndarray, np.ndarray]) -> float:
        """How hard (N, normal) `arm` presses on the table and on objects it does not hold
        (a grasp's squeeze is not pressing), and what it holds on anything but the arms (a
        held object driven into the table)."""
        b1, b2 = contact
        if not len(b1):
            return 0.0
        mine, arms = self._arm_mask[arm], self._any_arm_mask
        other = np.where(mine[b1], b2, b1)
        pressed = (mine[b1] ^ mine[b2]) & ~arms[other]
        if not pressed.any():
            return 0.0  # it touches nothing: it holds nothing either
        held = [self._object_bodies[name] for name in self._holding(arm, contact)]
        if held:
            # a body id -> bool table of the held bodies: what np.isin answered, without its
            # sorting (three calls a tick while an arm holds something)
            held_mask = self._body_mask(held)
            pressed &= ~held_mask[other]
            in_1, in_2 = held_mask[b1], held_mask[b2]
            pressed |= (in_1 & ~arms[b2] & ~in_2) | (in_2 & ~arms[b1] & ~in_1)
        return float(self._normal_force(np.flatnonzero(pressed)))

    def holding(self, arm: str) -> tuple[str, ...]:
        """Objects touched by both fingers of `arm`."""
        return self._holding(arm, self._contact_bodies())

    def _holding(self, arm: str, contact: tuple[np.ndarray, np.ndarray]) -> tuple[str, ...]:
        """Objects touched by both fingers of `arm` in these contacts (their bodies' ids). A
        function of the contacts alone: the answer for the last contacts asked about is kept
        per arm, since a tick asks it of the same contacts up to three times (the contacts'
        tracking, the state, the task's snapshot)."""
        b1, b2 = contact
        key = (b1.tobytes(), b2.tobytes())
        kept = self._held.get(arm)
        if kept is not None and kept[0] == key:
            return kept[1]
        touched = []
        for finger in self._finger_bodies[arm]:
            others = np.concatenate([b2[b1 == finger], b1[b2 == finger]]).tolist()
            touched.append({self._object_of_body[o] for o in others if o in self._object_of_body})
        held = tuple(sorted(touched[0] & touched[1]))
        self._held[arm] = (key, held)
        return held

    def snapshot(self, step: int) -> WorldSnapshot:
        """What a task's success check sees."""
        d = self.data
        objects = {}
        for o in self.objects:
            body = self._object_bodies[o.name]
            objects[o.name] = ObjectState(
                o.name, o.label, d.xpos[body].copy(), d.xquat[body].copy(), o.size
            )
        contact = self._contact_bodies()
        arms = {}
        for a in ARMS:
            p, r = self._tcp_pose(a)
            hp, hr = self.home[a]
            arms[a] = ArmSnapshot(
                self.emb.gripper.open_fraction(d.qpos[self._finger_qpos[a]]),
                self._holding(a, contact),
                p,
                r,
                hp,
                hr,
            )
        return WorldSnapshot(
            objects,
            arms,
            self.table_top_z,
            step,
            latched=frozenset(self.latched),
            latch_order=tuple(self.latch_order),
            grasped=frozenset(self.grasped),
        )

    def object_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        body = self.data.body(name)
        return body.xpos.copy(), body.xquat.copy()

    # Collision depths for the shield ------------------------------------------------------

    def contacts(self, command: np.ndarray) -> Contacts:
        """How deep the arms would be in the table and in each other at `command` (objects
        as they are now; fingers at the commanded opening, within their joint range)."""
        m, d = self._probe_model, self._probe
        qpos = d.qpos
        qpos[:] = self.data.qpos
        g = self.emb.gripper
        for k, a in enumerate(ARMS):
            qpos[self._probe_arm_qpos[k]] = command[7 * k : 7 * k + 6]
            q7 = min(g.upper, max(g.lower, g.target(float(command[7 * k + 6]))))
            qpos[self._finger_qpos[a]] = qpos[self._mimic_qpos[a]] = q7
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        n = d.ncon
        if n == 0:  # the usual case, every tick: no contact at all
            return NO_CONTACT
        g1, g2 = d.contact.geom1[:n], d.contact.geom2[:n]
        depth = np.maximum(-d.contact.dist[:n], 0.0)
        table = self._table_geoms
        deepest = []
        for a in ARMS:
            mine = self._arm_geoms[a]
            hit = (mine[g1] & table[g2]) | (mine[g2] & table[g1])
            deepest.append(float(depth[hit].max()) if hit.any() else 0.0)
        left, right = self._arm_geoms['left'], self._arm_geoms['right']
        crossed = (left[g1] & right[g2]) | (left[g2] & right[g1])
        return Contacts(tuple(deepest), float(depth[crossed].max()) if crossed.any() else 0.0)

    # Collision checks for planning --------------------------------------------------------

    def arm_collides(self, arm: str, joints: np.ndarray) -> bool:
        """Would `arm` at `joints` (others as now) touch the table, an object or the other arm?"""
        m, scratch = self.model, self._scratch
        scratch.qpos[:] = self.data.qpos
        scratch.qpos[self._arm_qpos[arm]] = joints
        mujoco.mj_kinematics(m, scratch)
        mujoco.mj_collision(m, scratch)
        # The contacts as arrays: iterating `scratch.contact` cost ~110 us a call even with no
        # contact (the planner asks this for every sample of a segment).
        n = scratch.ncon
        b1 = m.geom_bodyid[scratch.contact.geom1[:n]]
        b2 = m.geom_bodyid[scratch.contact.geom2[:n]]
        mine = self._arm_mask[arm]
        in_1, in_2 = mine[b1], mine[b2]
        # between the arm and something not of the arm, deeper than 0.1 mm
        hit = (in_1 != in_2) & (scratch.contact.dist[:n] < -1e-4)
        if not hit.any():
            return False
        # ... and that something is not an object the arm holds (in the live scene)
        held = self._body_mask([self._object_bodies[name] for name in self.holding(arm)])
        other = np.where(in_1, b2, b1)
        return bool((hit & ~held[other]).any())

    def _body_mask(self, bodies) -> np.ndarray:
        """A body id -> bool table, True for `bodies`."""
        mask = np.zeros(self.model.nbody, dtype=bool)
        mask[list(bodies)] = True
        return mask

    # Rendering ----------------------------------------------------------------------------

    def render(self, camera: str, depth: bool = True, segmentation: bool = True) -> CameraView:
        """RGB (and depth, segmentation) of one camera at its configured resolution.

        A camera asked again while the scene is as it was (the turn report's images and
        locate()'s views of one tick, a recorded frame) gets the render it had, not a new one:
        each camera's last view is kept with what a render depends on, and its arrays are
        read-only."""
        self._check_cameras([camera])
        return self._gl.submit(self._view, self.data, camera, depth, segmentation).result()

    def render_later(self, cameras: list[str]) -> Future[list[CameraView]]:
        """The RGB views of `cameras` as the scene is now, rendered on the GL thread while the
        caller goes on (the next ticks' physics and a render overlap: MuJoCo leaves Python's
        lock while it draws). The scene is copied first (~10 us); the colours are the model's
        when the render runs, so the station changes one only after the renders before it."""
        self._check_cameras(cameras)
        frame = self._frames.pop() if self._frames else mujoco.MjData(self.model)
        mujoco.mj_copyData(frame, self.model, self.data)

        def views() -> list[CameraView]:
            try:
                return [self._view(frame, c, False, False) for c in cameras]
            finally:
                self._frames.append(frame)

        return self._gl.submit(views)

    def _check_cameras(self, cameras: list[str]) -> None:
        for camera in cameras:
            if camera not in self.emb.cameras:
                known = ', '.join(self.emb.cameras)
                raise ValueError(f'unknown camera {camera!r}; cameras: {known}')

    def _view(
        self, data: mujoco.MjData, camera: str, depth: bool, segmentation: bool
    ) -> CameraView:
        """On the GL thread: the kept view of `camera` if the scene of `data` is the one it was
        rendered from and it has the images asked for, else a new render (then kept)."""
        scene = self._scene_key(data)
        kept = self._views.get(camera)
        view = kept[1] if kept is not None and kept[0] == scene else None
        if view is None:
            view = self._render(data, camera, depth, segmentation)
        else:  # the images it lacks are rendered; its RGB is not rendered again
            need_depth = depth and view.depth is None
            need_segmentation = segmentation and view.segmentation is None
            if need_depth or need_segmentation:
                more = self._render(data, camera, need_depth, need_segmentation, rgb=view.rgb)
                view = replace(
                    view,
                    depth=more.depth if need_depth else view.depth,
                    segmentation=more.segmentation if need_segmentation else view.segmentation,
                )
        for array in (view.rgb, view.depth, view.segmentation):
            if array is not None:
                array.flags.writeable = False
        self._views[camera] = (scene, view)
        return replace(
            view,
            depth=view.depth if depth else None,
            segmentation=view.segmentation if segmentation else None,
        )

    def _segmentation(self, ids: np.ndarray, scene: mujoco.MjvScene) -> np.ndarray:
        """Each pixel's task object (its index in `objects`, -1 for none) from a render's ID
        colours: a pixel's colour is 1 + the scene geom's segid (0 is the background)."""
        colours = ids.astype(np.uint32)
        segids = colours[..., 0] + colours[..., 1] * (2**8) + colours[..., 2] * (2**16)
        object_of_body = {self._object_bodies[o.name]: i for i, o in enumerate(self.objects)}
        table = np.full(scene.ngeom + 1, -1, dtype=np.int32)
        for g in scene.geoms[: scene.ngeom]:
            if g.segid != -1 and g.objtype == int(mujoco.mjtObj.mjOBJ_GEOM) and g.objid >= 0:
                body = int(self.model.geom_bodyid[g.objid])
                table[g.segid + 1] = object_of_body.get(body, -1)
        return table[segids]

    def _scene_key(self, d: mujoco.MjData) -> tuple:
        """Everything a render depends on that can change: the time a view carries, the geoms'
        and cameras' poses (as the last step or forward pass left them) and the colours (a
        latched button turns green). Equal keys, equal images."""
        return (
            d.time,
            d.geom_xpos.tobytes(),
            d.geom_xmat.tobytes(),
            d.cam_xpos.tobytes(),
            d.cam_xmat.tobytes(),
            self.model.geom_rgba.tobytes(),
        )

    def _render(
        self,
        data: mujoco.MjData,
        camera: str,
        depth: bool,
        segmentation: bool,
        rgb: np.ndarray | None = None,
    ) -> CameraView:
        """A new view of `camera` in the scene of `data`; with `rgb` (this scene's, rendered
        before) only the depth and segmentation passes run."""
        cam = self.emb.cameras[camera]
        key = (cam.height, cam.width)
        renderer = self._renderers.get(key)
        if renderer is None:
            renderer = self._renderers[key] = mujoco.Renderer(self.model, cam.height, cam.width)
            self._context_keys[key] = render_context_key(self.model)
        if rgb is None:
            renderer.update_scene(data, camera, self._camera_option)
            rgb = renderer.render().copy()
        depth_img = ids = None
        if depth:
            renderer.enable_depth_rendering()
            renderer.update_scene(data, camera, self._camera_option)
            depth_img = renderer.render().astype(np.float32)
            renderer.disable_depth_rendering()
            if segmentation:
                # The depth pass draws what the segmentation pass would (mujoco's Renderer
                # turns on the same ID colours for both): its colour buffer is read instead
                # of rendering the scene a third time (~18 ms for the head camera here).
                ids = np.empty((cam.height, cam.width, 3), dtype=np.uint8)
                rect = mujoco.MjrRect(0, 0, cam.width, cam.height)
                mujoco.mjr_readPixels(ids, None, rect, renderer._mjr_context)
                ids = np.flipud(ids)  # EGL's rows run bottom-up, as the Renderer flips them
        elif segmentation:
            renderer.enable_segmentation_rendering()
            renderer.update_scene(data, camera, self._camera_option)
            renderer.render()
            renderer.disable_segmentation_rendering()
            ids = np.empty((cam.height, cam.width, 3), dtype=np.uint8)
            rect = mujoco.MjrRect(0, 0, cam.width, cam.height)
            mujoco.mjr_readPixels(ids, None, rect, renderer._mjr_context)
            ids = np.flipud(ids)
        seg = None if ids is None else self._segmentation(ids, renderer.scene)
        fy = 0.5 * cam.height / np.tan(np.radians(cam.fovy_deg) / 2)
        c = data.cam(camera)
        optical = c.xmat.reshape(3, 3) @ _MJ_TO_OPTICAL
        return CameraView(
            camera,
            rgb,
            fy,
            fy,
            cam.width / 2,
            cam.height / 2,
            c.xpos.copy(),
            optical,
            depth_img,
            seg,
            tuple(o.label for o in self.objects),
            float(data.time),
        )
