"""Ticks per second through the ROS `tick` service vs the backend in-process, and ms per observe.

The ratio of the two tick rates is the ROS overhead; sim speed is simulated seconds per wall
second without cameras. Prints JSON.

    python perf/worker.py [--ticks 500] [--observes 20]
"""

import argparse
import json
import threading
import time

import numpy as np
import rclpy
from arx_x5_description.embodiment import load_embodiment
from harness_bringup.domain import claim_domain_id
from harness_worker.worker import Worker
from harness_worker.worker_node import WorkerNode
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

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
                worker.observe(list(emb.cameras), **kwargs)
            out[f'three_cameras_{label}_{kind}_ms'] = (time.perf_counter() - t) / n * 1e3
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ticks', type=int, default=500)
    parser.add_argument('--observes', type=int, default=20)
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
        'targets': {'ros_overhead_ms_per_tick': 1.0, 'sim_speed_x_real_time': 10.0},
    }
    result.update({k: round(v, 2) for k, v in observe_ms(emb, urdf, args.observes).items()})
    print(json.dumps(result))


if __name__ == '__main__':
    main()
