import os
import threading

# CPython 3.11.7 raises SystemError ("AST constructor recursion depth mismatch",
# python/cpython#106905) when code is compiled while another thread compiles; hypothesis'
# pytest plugin imports (compiles) hypothesis at the session's end, when ROS executor threads
# of the tests may still run. Imported here, before any thread starts, it is compiled once.
import hypothesis  # noqa: F401
import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from harness_kernel.kernel import Kernel
from harness_kernel.program_host import ProgramHost
from harness_kernel.sandbox import Limits
from harness_types.execution import Execution, TraceTick
from harness_types.robot_state import ArmState, RobotState
from harness_types.scene import ClaimAnswer

DOC_VALUES = {'reactive_budget_ms': 20.0, 'control_hz': 25.0, 'max_contact_force_n': 20.0}


def robot_state(step=0):
    def arm(name):
        return ArmState(
            name,
            np.zeros(6),
            1.0,
            np.array([0.0, 0.0, 0.9]),
            np.array([1.0, 0, 0, 0]),
            np.array([0.0, 0.0, 1.0]),
        )

    return RobotState(arm('left'), arm('right'), step, step / 25)


class ScriptedRobot:
    """A robot port that answers each skill with the next scripted event (no ROS). When
    `ticks` is set, an execution that calls the reactive stage asks it that many times (from
    another thread, as the skill server does; every execution when `ask_always`) and stops
    early as the stage says."""

    def __init__(self):
        self.events = []
        self.calls = []
        self.ticks = 0
        self.ask_always = False
        self.kernel = None
        self.reactive_results = []

    def execute(self, skill, args, reactive, pump):
        self.calls.append((skill, dict(args), reactive))
        name = self.events.pop(0) if self.events else 'COMPLETED'
        if self.ticks and (reactive or self.ask_always):
            done = threading.Event()

            def ticker():
                for k in range(self.ticks):
                    r = self.kernel.reactive_step(robot_state(k), True)
                    self.reactive_results.append(r)
                    if r.fault or r.guard_fired or r.until_satisfied:
                        break
                done.set()

            threading.Thread(target=ticker, daemon=True).start()
            while not done.is_set():
                pump.serve(0.001)
            last = self.reactive_results[-1]
            if last.fault:
                name = 'REACTIVE_FAULT'
            elif last.guard_fired:
                name = last.guard_action if last.guard_action.isupper() else 'GUARD_TRIGGERED'
            elif last.until_satisfied:
                name = 'PREDICATE_SATISFIED'
        tick = TraceTick(0.04, np.zeros(14), np.zeros(14))
        holding = True if skill == 'close_gripper' else None
        return Execution(
            skill,
            args.get('arm', ''),
            name,
            f'{skill} ended with {name}',
            (),
            [tick],
            holding=holding,
        )

    def state(self):
        return robot_state()

    def views(self, cameras, depth=True, segmentation=True):
        return []

    def reachable(self, arm, position, quat, collision_free=False):
        return True

    def verify(self, claim):
        return ClaimAnswer(True, 'cube' in claim, f'checked: {claim}')


@pytest.fixture
def make_kernel(tmp_path):
    """A kernel core with its sandboxed program process and a scripted robot."""
    made = []

    def make(cell_timeout=3.0, api=None, limits=None, catalog=None):
        robot = ScriptedRobot()
        log = []
        host = ProgramHost(tmp_path / f'ws{len(made)}', 61099, limits or Limits(), api, DOC_VALUES)
        kernel = Kernel(
            robot, host, cell_timeout, 20.0, 0.765, 0.2, api, log.append, catalog=catalog
        )
        robot.kernel = kernel
        kernel.start()
        made.append(kernel)
        return kernel, robot, log

    yield make
    for kernel in made:
        kernel.close()


class KernelSession:
    """A kernel process in a station graph's domain, driven the way the driver drives it."""

    def __init__(self, graph, workspace, log, ros_args=()):
        from harness_bringup.kernel_process import KernelProcess

        from harness_msgs.action import RunCell
        from harness_types import names

        self.client = graph.action_client(RunCell, names.RUN_CELL)
        self.process = KernelProcess(self.client, graph.domain_id, workspace, log, list(ros_args))
        self.process.start()

    def run(self, code, timeout=300.0, wrap_up=False):
        from harness_types.convert import cell_result_of
        from harness_types.wait import wait_future

        from harness_msgs.action import RunCell

        handle = wait_future(
            self.client.send_goal_async(RunCell.Goal(code=code, wrap_up=wrap_up)), 30
        )
        return cell_result_of(wait_future(handle.get_result_async(), timeout).result)

    def stop(self):
        self.process.stop()
