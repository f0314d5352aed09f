"""Ticks per second through the ROS `tick` service vs the backend in-process, ms per observe,
and the state topics' cost a tick (built messages vs the worker's serialized templates).

Through ROS is as `ros2 launch` composes the station: the worker in its own process, ticked
by the skill server's port (`harness run` and warm stations call the worker beside them
directly). The ratio of the two tick rates is the ROS overhead; sim speed is simulated seconds
per wall second without cameras. Prints JSON.

    python perf/worker.py [--ticks 500] [--rounds 3] [--observes 20]
"""

import argparse
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from _record import Target, add_save_argument, report
from ament_index_python.packages import get_package_prefix
from arx_x5_description.embodiment import load_embodiment
from geometry_msgs.msg import TransformStamped
from harness_bringup.domain import claim_domain_id
from harness_bringup.processes import child_environment, use_wheels_ament_prefix, wait_or_kill
from harness_skills.ros_port import RosStationPort
from harness_types.convert import stamp
from harness_types.process import leave_graph
from harness_types.tf_tree import TfTree
from harness_types.wait import wait_future
from harness_worker.state_messages import StateMessages
from harness_worker.worker import Worker
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from arx_x5_description.urdf import station_urdf
from harness_msgs.srv import Reset
from harness_types import names


def hold_commands(base: np.ndarray, n: int) -> list[np.ndarray]:
    # A slow sway of joint1 of both arms: every tick moves, every command is accepted.
    out = []
    for k in range(n):
        c = base.copy()
        c[0] = c[7] = 0.2 * np.sin(k / 25.0)
        out.append(c)
    return out


def in_process(emb, urdf, n: int, rounds: int) -> dict:
    worker = Worker(emb, urdf)
    walls, token = [], ''
    for _ in range(rounds):
        token = worker.reset('lift_cube', 0, 0, token).token
        commands = hold_commands(worker.measured(), n)
        t = time.perf_counter()
        for c in commands:
            assert worker.tick(c).accepted
        walls.append(time.perf_counter() - t)
    simulated = worker.time
    worker.close()
    wall = min(walls)  # the round the machine's other work disturbed least
    return {'ticks_per_s': n / wall, 'sim_speed_x_real_time': simulated / wall}


def through_ros(n: int, rounds: int) -> dict:
    """Ticks as `ros2 launch` sends them: the worker in its own process (its executable), the
    skill server's port (RosStationPort, on a node its multi-threaded executor spins) calling
    worker/tick from this one."""
    claim = claim_domain_id()
    # (the claim chose the harness's Fast DDS profile for this process and the worker's)
    worker = subprocess.Popen(
        [str(Path(get_package_prefix('harness_worker')) / 'lib' / 'harness_worker' / 'worker')],
        env=child_environment(claim.domain_id),
        stdout=subprocess.DEVNULL,
    )
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    node = Node('bench_client', context=context)
    executor = MultiThreadedExecutor(context=context)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    port = RosStationPort(node, timeout=30.0)
    try:
        reset = node.create_client(Reset, names.worker_service('reset'))
        if not reset.wait_for_service(timeout_sec=60):
            raise SystemExit('the worker process did not offer worker/reset within 60 s')
        walls, token = [], ''
        for _ in range(rounds):
            request = Reset.Request(task='lift_cube', layout=0, token=token)
            answer = wait_future(reset.call_async(request), 60)
            if not answer.success:
                raise SystemExit(f'worker/reset: {answer.message}')
            token = answer.token
            commands = hold_commands(port.observe_state().measured, n)
            t = time.perf_counter()
            for c in commands:
                assert port.tick(c).accepted
            walls.append(time.perf_counter() - t)
    finally:
        port.close()
        executor.shutdown()
        leave_graph([node], context)
        worker.terminate()
        wait_or_kill(worker, 10)
        claim.release()
    return {'ticks_per_s': n / min(walls)}


def observe_ms(emb, urdf, n: int) -> dict:
    worker = Worker(emb, urdf)
    worker.reset('place_in_bowl', 0, 0)
    out = {}
    for label, size in (('320x240', (320, 240)), ('640x480', (640, 480))):
        for cam in worker.station.emb.cameras.values():
            object.__setattr__(cam, 'width', size[0])
            object.__setattr__(cam, 'height', size[1])
        worker.station.close_renderers()
        worker.observe(list(emb.cameras))  # warm up the renderer
        for kind, kwargs in (
            ('rgb', dict(depth=False, segmentation=False)),
            ('rgb_depth_seg', dict(depth=True, segmentation=True)),
        ):
            t = time.perf_counter()
            for _ in range(n):
                # the scene does not change here: without this, the kept views would be timed
                worker.station._views.clear()
                worker.observe(list(emb.cameras), **kwargs)
            out[f'three_cameras_{label}_{kind}_ms'] = (time.perf_counter() - t) / n * 1e3
    worker.close()  # its renderers freed on their GL thread, not by the collector
    return out


def state_topics_us(emb, urdf, n: int) -> dict:
    """A tick's /clock, /joint_states and /tf, side by side: as rclpy messages built and
    serialized each tick (what the worker published before), and as the worker writes them
    now (StateMessages: numbers into bytes serialized once). The bytes are what publish sends."""
    tree = TfTree(urdf)
    names = emb.all_joint_names()
    messages = StateMessages(names, tree)
    positions = dict(zip(names, np.linspace(-1.0, 1.0, len(names)), strict=True))
    values = list(positions.values())

    def as_messages(time_s: float) -> None:
        now = stamp(time_s)
        serialize_message(Clock(clock=now))
        js = JointState(name=list(positions), position=values)
        js.header.stamp = now
        serialize_message(js)
        transforms = []
        for tf in tree.moving(positions):
            t = TransformStamped()
            t.header.stamp, t.header.frame_id, t.child_frame_id = now, tf.parent, tf.child
            tr, rot = t.transform.translation, t.transform.rotation
            tr.x, tr.y, tr.z = (float(v) for v in tf.translation)
            rot.w, rot.x, rot.y, rot.z = (float(v) for v in tf.quat)
            transforms.append(t)
        serialize_message(TFMessage(transforms=transforms))

    def as_templates(time_s: float) -> None:
        messages.clock(time_s)
        messages.joint_states(values, time_s)
        messages.tf(positions, time_s)

    out = {}
    for _ in range(3):  # interleaved: the machine's noise falls on both
        for label, publish in (('messages', as_messages), ('templates', as_templates)):
            t = time.perf_counter()
            for k in range(n):
                publish(k * 0.04)
            us = (time.perf_counter() - t) / n * 1e6
            out[label] = min(out.get(label, us), us)
    return {
        'state_topics_us_per_tick_messages': out['messages'],
        'state_topics_us_per_tick_templates': out['templates'],
        'state_topics_ratio': out['messages'] / out['templates'],
    }


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--ticks',
        type=int,
        default=500,
        help="ticks a round, 1..700 (lift_cube's step limit is 750)",
    )
    parser.add_argument(
        '--rounds', type=int, default=3, help='rounds of ticks each way; the fastest is kept'
    )
    parser.add_argument('--observes', type=int, default=20)
    add_save_argument(parser)
    args = parser.parse_args()
    if not 1 <= args.ticks <= 700 or args.rounds < 1:
        parser.error('--ticks must be 1..700 and --rounds at least 1')
    emb = load_embodiment()
    urdf = station_urdf()
    direct = in_process(emb, urdf, args.ticks, args.rounds)
    ros = through_ros(args.ticks, args.rounds)
    result = {
        'bench': 'worker',
        'ticks': args.ticks,
        'rounds': args.rounds,
        'in_process_ticks_per_s': round(direct['ticks_per_s'], 1),
        'ros_ticks_per_s': round(ros['ticks_per_s'], 1),
        'ros_overhead_ms_per_tick': round(
            1e3 / ros['ticks_per_s'] - 1e3 / direct['ticks_per_s'], 3
        ),
        'ratio_in_process_over_ros': round(direct['ticks_per_s'] / ros['ticks_per_s'], 2),
        'sim_speed_x_real_time_in_process': round(direct['sim_speed_x_real_time'], 1),
        'sim_speed_x_real_time_ros': round(ros['ticks_per_s'] / emb.rates.control_hz, 1),
    }
    result.update({k: round(v, 2) for k, v in observe_ms(emb, urdf, args.observes).items()})
    result.update({k: round(v, 1) for k, v in state_topics_us(emb, urdf, args.ticks).items()})
    report(
        result,
        [
            Target(
                'ROS overhead per worker tick', result['ros_overhead_ms_per_tick'], '<=', 1.0, 'ms'
            ),
            Target(
                'worker ticks through ROS, times real time',
                result['sim_speed_x_real_time_ros'],
                '>=',
                10.0,
                'x',
            ),
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
