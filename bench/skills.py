"""Per-tick cost of the execution loop (without and with a program guard called back through
reactive_step), against a bare /worker/tick round trip; wall vs simulated time of a move_eef,
and of a whole `pick` run as a program cell in a kernel process (locate excluded).

All nodes (worker, skill server, program stand-in, client) run in one process, as in the tests.
Prints JSON.

    python bench/skills.py [--repeats 6]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from geometry_msgs.msg import Point
from harness_kernel.kernel_process import KernelProcess
from harness_reactive.guards import Guard
from harness_reactive.stage import ProgramStage
from harness_skills.reactive_server import serve_reactive_step
from harness_skills.station_graph import StationGraph
from rclpy.action import ActionClient
from rclpy.node import Node

from harness_msgs.action import MoveEef, MoveJoints
from harness_msgs.msg import Command
from harness_msgs.srv import Tick


def wait(future):
    # Polls every 0.2 ms (StationGraph's wait_future polls every 1 ms): the bare tick round trip
    # is measured with it.
    while not future.done():
        time.sleep(0.0002)
    return future.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=6, help='moves per measurement')
    args = parser.parse_args()
    with StationGraph('client') as graph:
        measure(graph, args.repeats)


def measure(graph: StationGraph, repeats: int) -> None:
    worker, client = graph.worker, graph.client
    program = Node('program', context=graph.context)
    stage = ProgramStage()
    serve_reactive_step(program, stage)
    graph.add_node(program)
    move = ActionClient(client, MoveJoints, '/skills/move_joints')
    move_eef = ActionClient(client, MoveEef, '/skills/move_eef')
    tick = client.create_client(Tick, '/worker/tick')
    for c in (move, move_eef):
        c.wait_for_server(timeout_sec=10)
    tick.wait_for_service(timeout_sec=10)
    graph.reset('lift_cube')

    def run(goal, action=move):
        handle = wait(action.send_goal_async(goal))
        return wait(handle.get_result_async()).result

    def per_tick(reactive: bool) -> float:
        ticks, wall = 0, 0.0
        for k in range(repeats):
            goal = MoveJoints.Goal(arm='left', positions=[0.4 * (k % 2), 0.3, 0.3, 0, 0, 0])
            goal.options.reactive = reactive
            t = time.perf_counter()
            r = run(goal)
            wall += time.perf_counter() - t
            ticks += len(r.trace.ticks)
        return wall / ticks * 1e3

    bare = []
    state = worker.worker.measured()
    for _ in range(200):
        t = time.perf_counter()
        wait(tick.call_async(Tick.Request(command=Command(positions=state.tolist()))))
        bare.append(time.perf_counter() - t)
    without_guard = per_tick(False)
    stage.guards.add(Guard('never', lambda obs: obs.arms['left'].grip_force > 1e9))
    with_guard = per_tick(True)
    stage.guards.clear()
    sim0 = worker.worker.station.sim_time
    t = time.perf_counter()
    r = run(MoveEef.Goal(arm='left', position=Point(x=-0.2, y=0.05, z=0.9)), move_eef)
    eef_wall = time.perf_counter() - t
    eef_sim = worker.worker.station.sim_time - sim0
    pick_sim, pick_wall, pick_status = measure_pick(graph)
    print(
        json.dumps(
            {
                'bench': 'skills',
                'bare_tick_round_trip_ms': round(float(np.median(bare)) * 1e3, 3),
                'execution_ms_per_tick_without_guard': round(without_guard, 3),
                'execution_ms_per_tick_with_program_guard': round(with_guard, 3),
                'guard_callback_overhead_ms_per_tick': round(with_guard - without_guard, 3),
                'move_eef_event': r.event.name,
                'move_eef_sim_s': round(eef_sim, 3),
                'move_eef_wall_s': round(eef_wall, 3),
                'move_eef_sim_over_wall': round(eef_sim / eef_wall, 2),
                'pick_status': pick_status,
                'pick_sim_s': round(pick_sim, 3),
                'pick_wall_s': round(pick_wall, 3),
                'pick_sim_over_wall': round(pick_sim / pick_wall, 2),
            }
        )
    )


def measure_pick(graph: StationGraph) -> tuple[float, float, str]:
    graph.reset('lift_cube')
    workspace = Path(tempfile.mkdtemp(prefix='bench-kernel-'))
    kernel = KernelProcess(
        graph.client, graph.domain_id, workspace / 'workspace', workspace / 'kernel.log'
    )
    kernel.start()
    try:
        kernel.run_cell("cube = locate('cube')[0]")
        station = graph.worker.worker.station
        sim0 = station.sim_time
        t = time.perf_counter()
        result = kernel.run_cell('pick(cube)')
        wall = time.perf_counter() - t
        return station.sim_time - sim0, wall, result.status
    finally:
        kernel.stop()


if __name__ == '__main__':
    main()
