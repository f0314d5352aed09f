"""Ticks per second through the ROS `tick` service vs the backend in-process, ms per observe,
and the state topics' cost a tick (built messages vs the worker's serialized templates).

The ratio of the two tick rates is the ROS overhead; sim speed is simulated seconds per wall
second without cameras. Prints JSON.

    python perf/worker.py [--ticks 500] [--observes 20]
"""

import argparse
import threading
import time

import numpy as np
import rclpy
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from geometry_msgs.msg import TransformStamped
from harness_bringup.domain import claim_domain_id
from harness_bringup.processes import use_wheels_ament_prefix
from harness_types.convert import stamp
from harness_types.tf_tree import TfTree
from harness_worker.state_messages import StateMessages
from harness_worker.worker import Worker
from harness_worker.worker_node import WorkerNode
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from arx_x5_description.urdf import station_urdf
from harness_msgs.msg import Command
from harness_msgs.srv import Reset, Tick
from harness_types import names


def hold_commands(worker: Worker, n: int) -> list[np.ndarray]:
    base = worker.measured()
    # A slow sway of joint1 of both arms: every tick moves, every command is accepted.
    out = []
    for k in range(n):
        c = base.copy()
        c[0] = c[7] = 0.2 * np.sin(k / 25.0)
        out.append(c)
    return out


def in_process(emb, urdf, n: int) -> dict:
    worker = Worker(emb, urdf)
    worker.reset('lift_cube', 0, 0)
    commands = hold_commands(worker, n)
    t = time.perf_counter()
    for c in commands:
        assert worker.tick(c).accepted
    wall = time.perf_counter() - t
    return {'ticks_per_s': n / wall, 'sim_speed_x_real_time': worker.time / wall}


def through_ros(emb, urdf, n: int) -> dict:
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    worker = Worker(emb, urdf)
    node = WorkerNode(worker, context=context)
    client_node = Node('bench_client', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)  # the worker spins in its own thread, as in its own process
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    reset = client_node.create_client(Reset, names.worker_service('reset'))
    tick = client_node.create_client(Tick, names.worker_service('tick'))
    reset.wait_for_service(timeout_sec=10)
    tick.wait_for_service(timeout_sec=10)

    client_executor = SingleThreadedExecutor(context=context)
    client_executor.add_node(client_node)

    def call(client, request):
        future = client.call_async(request)
        client_executor.spin_until_future_complete(future, timeout_sec=30)
        return future.result()

    call(reset, Reset.Request(task='lift_cube', layout=0, seed=0))
    commands = hold_commands(worker, n)
    t = time.perf_counter()
    for c in commands:
        assert call(tick, Tick.Request(command=Command(positions=c.tolist()))).accepted
    wall = time.perf_counter() - t
    client_executor.shutdown()
    executor.shutdown()
    rclpy.shutdown(context=context)
    claim.release()
    return {'ticks_per_s': n / wall}


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
    parser.add_argument('--ticks', type=int, default=500)
    parser.add_argument('--observes', type=int, default=20)
    add_save_argument(parser)
    args = parser.parse_args()
    emb = load_embodiment()
    urdf = station_urdf()
    direct = in_process(emb, urdf, args.ticks)
    ros = through_ros(emb, urdf, args.ticks)
    result = {
        'bench': 'worker',
        'ticks': args.ticks,
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
