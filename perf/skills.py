"""Per-tick cost of the execution loop, without and with a program guard: the guard runs in
the sandboxed program process, called back each tick through the kernel node (skill server ->
kernel/reactive_step -> channel -> program). Also a bare worker/tick round trip, wall vs
simulated time of a move_eef, and of a whole `pick` run as a program cell (locate excluded).

The worker and skill server run in this process (as in `harness run`); the kernel node and the
program process in their own. Prints JSON.

    python perf/skills.py [--repeats 6]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from geometry_msgs.msg import Point
from harness_bringup.kernel_process import KernelProcess
from harness_bringup.processes import use_wheels_ament_prefix
from harness_bringup.station_graph import StationGraph
from harness_types.convert import cell_result_of
from harness_types.wait import wait_future
from rclpy.action import ActionClient

from harness_msgs.action import MoveEef, RunCell
from harness_msgs.msg import Command
from harness_msgs.srv import Tick
from harness_types import names


def wait(future):
    return wait_future(future, 300.0)


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=6, help='moves per measurement')
    add_save_argument(parser)
    args = parser.parse_args()
    with StationGraph('client') as graph:
        measure(graph, args.repeats, args.save)


def measure(graph: StationGraph, repeats: int, save: bool) -> None:
    worker, client = graph.worker, graph.client
    move_eef = ActionClient(client, MoveEef, names.skill_action('move_eef'))
    tick = client.create_client(Tick, names.worker_service('tick'))
    move_eef.wait_for_server(timeout_sec=10)
    tick.wait_for_service(timeout_sec=10)
    graph.reset('lift_cube')
    bare = []
    state = worker.worker.measured()
    for _ in range(200):
        t = time.perf_counter()
        wait(tick.call_async(Tick.Request(command=Command(positions=state.tolist()))))
        bare.append(time.perf_counter() - t)
    sim0 = worker.worker.time
    t = time.perf_counter()
    handle = wait(
        move_eef.send_goal_async(MoveEef.Goal(arm='left', position=Point(x=-0.2, y=0.05, z=0.9)))
    )
    eef = wait(handle.get_result_async()).result.execution
    eef_wall = time.perf_counter() - t
    eef_sim = worker.worker.time - sim0

    root = Path(tempfile.mkdtemp(prefix='perf-kernel-'))
    run_cell = ActionClient(client, RunCell, names.RUN_CELL)
    kernel = KernelProcess(run_cell, graph.domain_id, root / 'workspace', root / 'kernel.log')
    kernel.start()

    def cell(code):
        handle = wait(run_cell.send_goal_async(RunCell.Goal(code=code)))
        return cell_result_of(wait(handle.get_result_async()).result)

    # The execution loop alone: the skill server's engine, from its first tick to its event.
    tick_ms = 1e3 / load_embodiment().rates.control_hz
    loops: list[float] = []
    engine = graph.skills.skills.engine
    run = engine.run

    def timed_run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            loops.append(time.perf_counter() - t)

    engine.run = timed_run

    def per_tick(guard: bool) -> tuple[float, float]:
        """ms per tick of the cells (a cell's own round trips included) and of the loop."""
        graph.reset('lift_cube')
        cell('clear_guards()' + ('\nwhen(lambda obs: obs.left.grip_force > 1e9)' if guard else ''))
        ticks, wall = 0, 0.0
        loops.clear()
        for k in range(repeats):
            t = time.perf_counter()
            r = cell(f'r = move_joints([{0.4 * (k % 2)}, 0.3, 0.3, 0, 0, 0], arm="left")')
            wall += time.perf_counter() - t
            assert r.status == 'ok', r.traceback
            ticks += len(r.executions[0].trace)
        return wall / ticks * 1e3, sum(loops) / ticks * 1e3

    try:
        without_guard, loop_without_guard = per_tick(False)
        with_guard, loop_with_guard = per_tick(True)
        graph.reset('lift_cube')
        cell("clear_guards()\ncube = locate('cube')[0]")
        sim0 = worker.worker.time
        t = time.perf_counter()
        pick = cell('pick(cube)')
        pick_wall = time.perf_counter() - t
        pick_sim = worker.worker.time - sim0
    finally:
        kernel.stop()
    report(
        {
            'bench': 'skills',
            'bare_tick_round_trip_ms': round(float(np.median(bare)) * 1e3, 3),
            'execution_ms_per_tick_without_guard': round(without_guard, 3),
            'execution_ms_per_tick_with_program_guard': round(with_guard, 3),
            'guard_callback_overhead_ms_per_tick': round(with_guard - without_guard, 3),
            'loop_ms_per_tick_without_guard': round(loop_without_guard, 3),
            'loop_ms_per_tick_with_program_guard': round(loop_with_guard, 3),
            'loop_x_real_time_without_guard': round(tick_ms / loop_without_guard, 1),
            'loop_x_real_time_with_program_guard': round(tick_ms / loop_with_guard, 1),
            'move_eef_event': eef.event.name,
            'move_eef_sim_s': round(eef_sim, 3),
            'move_eef_wall_s': round(eef_wall, 3),
            'move_eef_sim_over_wall': round(eef_sim / eef_wall, 2),
            'pick_status': pick.status,
            'pick_sim_s': round(pick_sim, 3),
            'pick_wall_s': round(pick_wall, 3),
            'pick_sim_over_wall': round(pick_sim / pick_wall, 2),
        },
        [
            Target(
                'execution loop without a program guard, times real time',
                round(tick_ms / loop_without_guard, 1),
                '>=',
                20,
                'x',
            ),
            Target(
                'execution loop with a program guard, times real time',
                round(tick_ms / loop_with_guard, 1),
                '>=',
                10,
                'x',
            ),
        ],
        save,
    )


if __name__ == '__main__':
    main()
