"""The mujoco station's faster answers give what their former formulas gave: the planner's
collision check (contacts as arrays, not iterated), what an arm holds (kept for the last
contacts asked about) and how hard it presses (a body table, not np.isin)."""

import mujoco
import numpy as np
import pytest
from arx_x5_description.embodiment import ARMS, load_embodiment
from harness_testing.staging import hold_object
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


def former_arm_collides(station, arm: str, joints: np.ndarray) -> bool:
    """arm_collides as it was: every contact of the scratch copy, one by one."""
    m, scratch = station.model, station._scratch
    scratch.qpos[:] = station.data.qpos
    scratch.qpos[station._arm_qpos[arm]] = joints
    mujoco.mj_kinematics(m, scratch)
    mujoco.mj_collision(m, scratch)
    mine = station._arm_bodies[arm]
    held = set(former_holding(station, arm))
    for c in scratch.contact[: scratch.ncon]:
        b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
        if (b1 in mine) == (b2 in mine):
            continue
        other = b2 if b1 in mine else b1
        if station._object_of_body.get(other) in held:
            continue
        if c.dist < -1e-4:
            return True
    return False


def former_holding(station, arm: str) -> tuple[str, ...]:
    b1, b2 = station._contact_bodies()
    touched = []
    for finger in station._finger_bodies[arm]:
        others = np.concatenate([b2[b1 == finger], b1[b2 == finger]]).tolist()
        touched.append({station._object_of_body[o] for o in others if o in station._object_of_body})
    return tuple(sorted(touched[0] & touched[1]))


def former_contact_force(station, arm: str) -> float:
    contact = station._contact_bodies()
    b1, b2 = contact
    if not len(b1):
        return 0.0
    mine, arms = station._arm_mask[arm], station._any_arm_mask
    other = np.where(mine[b1], b2, b1)
    pressed = (mine[b1] ^ mine[b2]) & ~arms[other]
    if not pressed.any():
        return 0.0
    held = [station._object_bodies[name] for name in former_holding(station, arm)]
    if held:
        pressed &= ~np.isin(other, held)
        in_1, in_2 = np.isin(b1, held), np.isin(b2, held)
        pressed |= (in_1 & ~arms[b2] & ~in_2) | (in_2 & ~arms[b1] & ~in_1)
    return float(station._normal_force(np.flatnonzero(pressed)))


def random_joints(worker, arm: str, rng, n: int) -> list[np.ndarray]:
    kin = worker.kinematics.arms[arm]
    return [rng.uniform(kin.lower, kin.upper) for _ in range(n)]


def compare_collisions(worker, rng, n: int = 150) -> list[bool]:
    answers = []
    for arm in ARMS:
        for q in random_joints(worker, arm, rng, n):
            former = former_arm_collides(worker.station, arm, q)
            assert worker.station.arm_collides(arm, q) == former, (arm, q)
            answers.append(former)
    return answers


def test_collision_check_as_before_free_and_holding(worker):
    rng = np.random.default_rng(7)
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    free = compare_collisions(worker, rng)
    assert any(free) and not all(free)  # both answers were compared
    assert hold_object(worker, 'cube')  # now the held cube does not count
    assert worker.station.holding('left') == ('cube',)
    held = compare_collisions(worker, rng)
    assert any(held) and not all(held)


def test_holding_and_pressing_as_before_tick_by_tick(worker):
    """Through a grasp, a lift and a push into the table: the kept answers and the body
    table answer what the former formulas did at every tick."""
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    station = worker.station
    seen = set()

    def check():
        for arm in ARMS:
            assert station.holding(arm) == former_holding(station, arm)
            force = station._contact_force(arm, station._contact_bodies())
            assert force == former_contact_force(station, arm)
            seen.add((arm, station.holding(arm), force > 0))

    orig_apply = station.apply

    def apply(command):
        orig_apply(command)
        check()

    station.apply = apply
    try:
        assert hold_object(worker, 'cube', lift=0.05)
        # press the held cube down into the table, then open
        base = worker.measured()
        for k in range(15):
            command = base.copy()
            command[1] += 0.01 * k
            if not worker.tick(command).accepted:
                break
    finally:
        del station.apply
    assert ('left', ('cube',), True) in seen  # held, and pressing: the body table's path
    assert ('right', (), False) in seen


def test_a_tick_steps_as_before(worker):
    """apply() computes every step's controls at once: the same controls, the same physics,
    bit for bit, as the former step-by-step interpolation."""
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    station = worker.station
    rates = station.emb.rates
    rng = np.random.default_rng(11)
    for _ in range(20):
        command = worker.measured() + rng.normal(0.0, 0.03, 14)
        command[[6, 13]] = rng.uniform(0.0, 1.0, 2)
        former = mujoco.MjData(station.model)
        mujoco.mj_copyData(former, station.model, station.data)
        start = station._ctrl_for(station.measured())
        for a in ARMS:
            start[station._grip_act[a]] = station.data.qpos[station._finger_qpos[a]]
        target = station._ctrl_for(command)
        for k in range(1, rates.physics_steps_per_tick + 1):
            alpha = min(1.0, k / rates.interpolation_steps)
            former.ctrl[:] = start + alpha * (target - start)
            mujoco.mj_step(station.model, former)
        station.apply(command)
        assert np.array_equal(station.data.ctrl, former.ctrl)
        assert np.array_equal(station.data.qpos, former.qpos)
        assert np.array_equal(station.data.qvel, former.qvel)
