"""The worker core without ROS: a whole lift, tokens, the step limit, determinism, rendering."""

import copy
import threading

import mujoco
import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_testing.scripted_motion import joint_steps, move_arm, reach
from harness_types.plugins import PluginError
from harness_worker.station import builtin_backends, make_station
from harness_worker.worker import Worker, WorkerError

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def emb():
    return load_embodiment()


@pytest.fixture(scope='module')
def urdf():
    return station_urdf()


@pytest.fixture
def worker(emb, urdf):
    """A worker closed after its test (its renderers freed on their GL thread: left to the
    garbage collector, a context is freed from another thread)."""
    made = Worker(emb, urdf)
    yield made
    made.close()


def ticker(worker):
    def tick(command):
        result = worker.tick(command)
        # Once the task succeeded the episode is over (the bench's rule): later ticks are refused.
        assert result.accepted or worker.succeeded, result.reasons
        return result

    return tick


def lift(worker):
    kin = worker.kinematics.arms['left']
    cube = worker.station.object_pose('cube')[0]
    tick = ticker(worker)
    q = reach(kin, cube + [0, 0, 0.06])
    move_arm(tick, worker.measured(), 'left', q, 1.0)
    q = reach(kin, cube + [0, 0, -0.008], q)
    move_arm(tick, worker.measured(), 'left', q, 1.0)
    move_arm(tick, worker.measured(), 'left', q, 0.0, settle=15)
    q = reach(kin, cube + [0, 0, 0.16], q)
    move_arm(tick, worker.measured(), 'left', q, 0.0)


def test_lift_cube_succeeds_with_the_token(emb, worker):
    reset = worker.reset('lift_cube', 0, 0)
    assert 'red cube' in reset.instruction
    assert not worker.outcome(reset.token).success
    assert worker.station.snapshot(worker.step).grasped == frozenset()
    lift(worker)
    outcome = worker.outcome(reset.token)
    assert outcome.success, outcome.detail
    assert worker.succeeded and worker.episode_ended
    refused = worker.tick(worker.measured())
    assert not refused.accepted and refused.reasons == ['episode ended: the task succeeded']
    # Held by both fingers and raised: the episode remembers the cube as grasped.
    assert worker.station.snapshot(worker.step).grasped == frozenset({'cube'})


def test_an_episode_that_does_not_end_on_success_goes_on_after_it(worker):
    """An agent operator's station (harness mcp: worker end_on_success false): the task
    succeeding ends nothing, and the ticks say nothing of it (the ground truth is hidden)."""
    worker.end_on_success = False
    reset = worker.reset('lift_cube', 0, 0)
    lift(worker)
    assert worker.outcome(reset.token).success  # (the ground truth, for the run's summary)
    assert not worker.succeeded and not worker.episode_ended
    after = worker.tick(worker.measured())
    assert after.accepted and after.reasons == [] and not after.episode_ended


def test_tokens_guard_reset_and_outcome(worker):
    with pytest.raises(WorkerError, match='no episode'):
        worker.tick(np.zeros(14))
    first = worker.reset('lift_cube', 1, 0)
    with pytest.raises(WorkerError, match='needs the token'):
        worker.reset('lift_cube', 1, 0)
    with pytest.raises(WorkerError, match='wrong or missing token'):
        worker.outcome('guess')
    second = worker.reset('place_in_bowl', 2, 0, token=first.token)
    assert second.token != first.token
    with pytest.raises(WorkerError, match='wrong or missing token'):
        worker.outcome(first.token)
    with pytest.raises(WorkerError, match='unknown task'):
        worker.reset('lift_the_cube', 0, 0, token=second.token)
    with pytest.raises(WorkerError, match='layouts 0..2'):
        worker.reset('lift_cube', 7, 0, token=second.token)


def test_the_last_outcome_read_releases_the_token_for_the_next_driver(worker):
    """harness serve: one driver after another (harness run --attach), each without the last
    one's token; a read that is not the episode's last keeps it held."""
    first = worker.reset('lift_cube', 1, 0)
    worker.outcome(first.token)
    with pytest.raises(WorkerError, match='an episode is running on this station'):
        worker.reset('lift_cube', 1, 0)
    worker.outcome(first.token, end=True)
    with pytest.raises(WorkerError, match='wrong or missing token'):
        worker.outcome(first.token)  # (the ended episode's token reads nothing more)
    second = worker.reset('lift_cube', 0, 0)  # another driver: no token needed
    with pytest.raises(WorkerError, match='an episode is running on this station'):
        worker.reset('lift_cube', 0, 0, token=first.token)  # (the ended one's opens nothing)
    worker.outcome(second.token, end=True)
    assert worker.reset('lift_cube', 0, 0, token=first.token).token  # none held: no bar


def test_a_jump_is_rejected_and_the_simulator_does_not_advance(worker):
    worker.reset('lift_cube', 0, 0)
    before = worker.state()
    command = worker.measured()
    command[0] += 0.5
    result = worker.tick(command)
    assert not result.accepted
    assert any('left_joint1 jumps 0.5000 rad' in r for r in result.reasons)
    assert result.state.step == before.step == 0
    assert result.state.time == before.time
    assert np.array_equal(result.state.left.joints, before.left.joints)


def test_step_limit_ends_the_episode(worker):
    worker.reset('lift_cube', 0, 0)
    worker.task.step_limit = 5  # this instance only
    hold = worker.measured()
    results = [worker.tick(hold) for _ in range(6)]
    assert [r.episode_ended for r in results[:5]] == [False] * 4 + [True]
    assert not results[5].accepted and 'episode ended' in results[5].reasons[0]
    assert worker.step == 5


def test_same_seed_same_commands_identical_states(emb, urdf):
    def run():
        worker = Worker(emb, urdf)
        try:
            worker.reset('lift_cube', 2, 7)
            lift(worker)
            return worker.station.data.qpos.copy(), worker.station.data.qvel.copy()
        finally:
            worker.close()

    (q1, v1), (q2, v2) = run(), run()
    assert q1.tobytes() == q2.tobytes() and v1.tobytes() == v2.tobytes()


def test_the_backend_comes_from_its_module_and_a_bad_name_says_so(emb, urdf):
    worker = Worker(emb, urdf, make_station('mujoco', emb, urdf))
    assert worker.profile().backend == 'mujoco' and worker.profile().kind == 'robot'
    assert 'mujoco' in builtin_backends()
    with pytest.raises(PluginError, match="no worker backend 'gazebo_classic'"):
        make_station('gazebo_classic', emb, urdf)
    worker.close()


def test_observe_segments_the_task_objects(worker):
    worker.reset('place_in_bowl', 0, 0)
    head, wrist = worker.observe(['cam_head', 'cam_left_wrist'])
    assert head.rgb.shape == (480, 640, 3) and wrist.rgb.shape == (240, 320, 3)
    assert head.labels == ('green block', 'blue bowl')
    seen = set(np.unique(head.segmentation)) - {-1}
    assert seen == {0, 1}
    assert np.isfinite(head.depth).all() and head.depth.min() > 0.1
    # the block's pixels back-project near its true position
    ys, xs = np.nonzero(head.segmentation == 0)
    v, u = ys.mean(), xs.mean()
    z = float(np.median(head.depth[head.segmentation == 0]))
    ray = np.array([(u - head.cx) / head.fx, (v - head.cy) / head.fy, 1.0]) * z
    world = head.position + head.rotation @ ray
    block = worker.station.object_pose('block')[0]
    assert np.linalg.norm(world[:2] - block[:2]) < 0.03
    with pytest.raises(ValueError, match='unknown camera'):
        worker.observe(['cam_top'])


def test_plan_goes_around_or_fails_clearly(worker):
    worker.reset('lift_cube', 0, 0)
    cube = worker.station.object_pose('cube')[0]
    result = worker.plan('left', position=cube + [0, 0, 0.08])
    assert result.ok, result.reason
    for q in result.path:
        assert not worker.station.arm_collides('left', q)
    inside_table = worker.plan('left', position=np.array([-0.25, 0.0, 0.70]))
    assert not inside_table.ok and inside_table.reason
    with pytest.raises(WorkerError, match="arm must be 'left' or 'right'"):
        worker.plan('middle', goal=np.zeros(6))


def commands_until_rejected(worker, arm, goal, gripper=1.0):
    """Tick `arm` toward joint `goal` in small steps; the first rejection, or None."""
    base = 0 if arm == 'left' else 7
    start = worker.measured()[base : base + 6]
    for target in joint_steps(start, goal, 0.03):
        command = worker.measured()
        command[base : base + 6] = target
        command[base + 6] = gripper
        result = worker.tick(command)
        if not result.accepted:
            return result
    return None


def test_fingers_into_the_table_are_refused(emb, worker):
    worker.reset('lift_cube', 0, 0)
    kin = worker.kinematics.arms['left']
    above = reach(kin, np.array([-0.25, 0.05, 0.80]))
    assert commands_until_rejected(worker, 'left', above) is None
    below = reach(kin, np.array([-0.25, 0.05, 0.74]), above)
    rejected = commands_until_rejected(worker, 'left', below)
    assert rejected is not None, 'the fingers went into the table'
    assert any('into the table' in r for r in rejected.reasons), rejected.reasons
    contacts = worker.station.contacts(worker.measured())
    assert contacts.table[0] <= emb.shield.collision_tolerance_m + 1e-6


def test_the_arms_may_not_cross(worker):
    worker.reset('lift_cube', 0, 0)
    left = reach(worker.kinematics.arms['left'], np.array([-0.03, 0.05, 0.95]))
    assert commands_until_rejected(worker, 'left', left) is None
    right = reach(worker.kinematics.arms['right'], np.array([-0.03, 0.05, 0.95]))
    rejected = commands_until_rejected(worker, 'right', right)
    assert rejected is not None, 'the right arm went through the left one'
    assert any('into each other' in r for r in rejected.reasons), rejected.reasons


def test_a_camera_asked_again_at_the_same_tick_gets_the_same_render(worker):
    worker.reset('lift_cube', 0, 0)
    station = worker.station
    full = station.render('cam_head', depth=True, segmentation=True)
    again = station.render('cam_head', depth=True, segmentation=False)
    assert again.rgb is full.rgb and again.depth is full.depth and again.segmentation is None
    assert not full.rgb.flags.writeable  # what several readers share cannot be changed
    with pytest.raises(ValueError):
        full.rgb[0, 0] = 0
    rgb_only = station.render('cam_left_wrist', depth=False, segmentation=False)
    with_depth = station.render('cam_left_wrist', depth=True, segmentation=False)
    assert rgb_only.depth is None and with_depth.depth is not None  # rendered anew
    assert with_depth.rgb is rgb_only.rgb and with_depth.segmentation is None  # its RGB kept
    both = station.render('cam_left_wrist', depth=True, segmentation=True)
    assert both.depth is with_depth.depth and both.segmentation is not None
    station._views.clear()
    fresh = station.render('cam_left_wrist', depth=True, segmentation=True)
    for image in ('rgb', 'depth', 'segmentation'):  # what was added is what one render gives
        assert np.array_equal(getattr(fresh, image), getattr(both, image))
    # a tick moves the arm (and time): a new render, equal to a render from scratch
    command = worker.measured()
    command[0] += 0.2
    assert worker.tick(command).accepted
    after = station.render('cam_head', depth=True, segmentation=True)
    assert after.rgb is not full.rgb and after.time > full.time
    station._views.clear()
    fresh = station.render('cam_head', depth=True, segmentation=True)
    assert np.array_equal(fresh.rgb, after.rgb) and np.array_equal(fresh.depth, after.depth)


def test_a_later_render_shows_the_scene_as_it_was_when_asked(emb, urdf):
    worker = Worker(emb, urdf)
    worker.reset('lift_cube', 0, 0)
    station = worker.station
    gate = threading.Event()
    station._gl.submit(gate.wait)  # the render thread is busy: the views wait behind it
    try:
        asked = copy.copy(station.data)
        views = station.render_later(['cam_head', 'cam_left_wrist'])
        command = worker.measured()
        command[0] += 0.3
        for _ in range(5):  # the world goes on meanwhile
            assert worker.tick(command).accepted
    finally:
        gate.set()
    head, wrist = views.result()
    assert head.time == asked.time < station.time and head.depth is None
    moved = station.render('cam_head', depth=False, segmentation=False)
    assert not np.array_equal(moved.rgb, head.rgb)
    station.data = asked  # the scene as it was asked for, rendered now
    station._views.clear()
    for view in (head, wrist):
        again = station.render(view.name, depth=False, segmentation=False)
        assert np.array_equal(again.rgb, view.rgb)
        assert np.array_equal(again.position, view.position)
    with pytest.raises(ValueError, match="unknown camera 'cam_tail'"):
        station.render_later(['cam_head', 'cam_tail'])
    worker.close()


def test_a_colour_changes_only_after_the_renders_asked_before(emb, urdf):
    worker = Worker(emb, urdf)
    worker.reset('press_button', 0, 0)
    station = worker.station
    before = station.render('cam_head', depth=False, segmentation=False)
    station._views.clear()  # the later render renders, rather than find the view kept
    gate = threading.Event()
    station._gl.submit(gate.wait)
    try:
        views = station.render_later(['cam_head'])
        recoloured = threading.Thread(target=station.recolour, args=(slice(None), (1, 0, 1, 1)))
        recoloured.start()
        recoloured.join(0.2)
        held = recoloured.is_alive()  # until the render asked before it has run
    finally:
        gate.set()
    recoloured.join()
    assert held
    assert np.array_equal(views.result()[0].rgb, before.rgb)
    after = station.render('cam_head', depth=False, segmentation=False)
    assert not np.array_equal(after.rgb, before.rgb)
    worker.close()


def _separate_passes(station, camera):
    """Depth and segmentation as mujoco's Renderer gives them, one render per image."""
    cam = station.emb.cameras[camera]
    renderer = mujoco.Renderer(station.model, cam.height, cam.width)
    try:
        renderer.enable_depth_rendering()
        renderer.update_scene(station.data, camera, station._camera_option)
        depth = renderer.render().astype(np.float32)
        renderer.disable_depth_rendering()
        renderer.enable_segmentation_rendering()
        renderer.update_scene(station.data, camera, station._camera_option)
        raw = renderer.render()
    finally:
        renderer.close()
    bodies = {station._object_bodies[o.name]: i for i, o in enumerate(station.objects)}
    lookup = np.array([bodies.get(int(b), -1) for b in station.model.geom_bodyid])
    seg = np.full(raw.shape[:2], -1, dtype=np.int32)
    valid = (raw[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)) & (raw[..., 0] >= 0)
    seg[valid] = lookup[raw[..., 0][valid]]
    return depth, seg


@pytest.mark.parametrize('task', ['place_in_bowl', 'sort_by_colour'])
def test_depth_and_segmentation_from_one_render_are_the_renderers_own(emb, urdf, task):
    worker = Worker(emb, urdf)
    worker.reset(task, 0, 0)
    station = worker.station
    command = worker.measured()
    command[1] += 0.15  # an arm in the views as well
    for _ in range(8):
        assert worker.tick(command).accepted
    for camera in emb.cameras:
        for depth, segmentation in ((True, True), (False, True)):
            station._views.clear()
            view = station.render(camera, depth=depth, segmentation=segmentation)
            want_depth, want_seg = station._gl.submit(_separate_passes, station, camera).result()
            assert np.array_equal(view.segmentation, want_seg), (camera, depth)
            assert (view.segmentation >= 0).any() or camera != 'cam_head'
            if depth:
                assert np.array_equal(view.depth, want_depth), camera
    worker.close()


def test_a_renderer_kept_for_the_next_scene_draws_what_a_new_one_draws(emb, urdf):
    """A reset keeps the renderers' GL contexts and gives them the new model (a warm station's
    next episode): every camera's colour, depth and segmentation are those of a worker that
    never drew anything else, bit for bit, also with textures and lights drawn for the scene,
    and where it keeps its MjrContext for a model that makes the same one."""
    from harness_bench.randomization import AXES

    cameras = list(emb.cameras)
    kept = Worker(emb, urdf)

    def held():
        return {size: (r._mjr_context, r._scene) for size, r in kept.station._renderers.items()}

    try:
        token = kept.reset('sort_by_colour', 0, 3, randomize=AXES).token
        kept.observe(cameras)  # the renderers now hold sort_by_colour's textured model
        # Each reset: whether the renderers keep their MjrContexts (a model with the same
        # render_context_key) or make new ones; the views are a new worker's either way.
        for task, seed, axes, same_context in (
            ('place_in_bowl', 5, AXES, False),  # other textures
            ('place_in_bowl', 5, AXES, True),  # the same textures
            ('lift_cube', 0, (), False),  # none
            ('stack_blocks_two', 1, (), True),  # none either, other objects and layout
        ):
            before = held()
            token = kept.reset(task, 0, seed, token=token, randomize=axes).token
            after = held()
            assert len(after) == 2, after  # the head camera's size and the wrists'
            for size, (context, scene) in after.items():
                assert (context is before[size][0]) == same_context, (task, size)
                assert (scene is before[size][1]) == same_context, (task, size)
            fresh = Worker(emb, urdf)
            try:
                fresh.reset(task, 0, seed, randomize=axes)
                for a, b in zip(kept.observe(cameras), fresh.observe(cameras), strict=True):
                    assert a.name == b.name
                    assert np.array_equal(a.rgb, b.rgb), (task, a.name)
                    assert np.array_equal(a.depth, b.depth), (task, a.name)
                    assert np.array_equal(a.segmentation, b.segmentation), (task, a.name)
            finally:
                fresh.close()
    finally:
        kept.close()
