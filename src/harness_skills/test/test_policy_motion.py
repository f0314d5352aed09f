"""run_policy's motion on the execution engine with an in-process station port (no ROS, no
server): each action held control_hz / action_hz ticks and counted once, the stall and the
time bound, and every way a policy can answer out of protocol ends in SKILL_ERROR."""

import numpy as np
import pytest
from harness_policy.stream import PolicyRun
from harness_skills.execution import Engine, Options
from harness_skills.policy_motion import PolicyMotion
from harness_skills.port import TickOutcome
from harness_types.robot_state import ArmState, RobotState


def state_of(q: np.ndarray, step: int) -> RobotState:
    def arm(name, base):
        return ArmState(
            name,
            q[base : base + 6].copy(),
            float(q[base + 6]),
            np.zeros(3),
            np.array([1.0, 0, 0, 0]),
            np.zeros(3),
        )

    return RobotState(arm('left', 0), arm('right', 7), step, step / 25)


class Port:
    """A station that goes exactly where it is told, one tick at a time."""

    def __init__(self):
        self.q = np.zeros(14)
        self.q[[6, 13]] = 1.0
        self.step = 0
        self.commands = []

    def observe_state(self):
        return state_of(self.q, self.step)

    def tick(self, command):
        self.commands.append(np.array(command))
        self.q, self.step = np.array(command), self.step + 1
        return TickOutcome(True, [], state_of(self.q, self.step), False)

    def views(self, cameras, depth):
        return []


class Connection:
    metadata = {'action_hz': 25.0}

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = 0

    def infer(self, obs):
        self.sent += 1
        answer = self.answers.pop(0) if self.answers else self.last
        self.last = answer
        return answer

    def close(self):
        pass


def run(answers, action_hz=25.0, seconds=4.0, stall=1.0):
    port = Port()
    connection = Connection(answers)
    connection.metadata = {'action_hz': action_hz}
    policy = PolicyRun('p', 'ws://h:1', 'go', action_hz, (), False, 5.0, stall)
    motion = PolicyMotion(policy, lambda url: connection, port.views, 25.0)
    e = Engine(port, 25.0).run('run_policy', motion, Options(max_seconds=seconds))
    return e, motion, port


def rows(n, joint=0.1):
    out = np.zeros((n, 14))
    out[:, [6, 13]] = 1.0
    out[:, 0] = joint * np.arange(1, n + 1)
    return out


def test_each_action_is_held_at_the_policy_rate_and_counted_once():
    e, motion, port = run([{'actions': rows(3), 'done': True}], action_hz=12.5)
    assert e.event == 'COMPLETED' and motion.actions == 3 and motion.chunks == 1
    assert len(port.commands) == 6  # each of the 3 actions held 2 ticks
    assert [c[0] for c in port.commands] == pytest.approx([0.1, 0.1, 0.2, 0.2, 0.3, 0.3])


def test_a_rate_that_does_not_divide_the_control_rate_is_refused():
    with pytest.raises(ValueError, match='whole multiple'):
        PolicyMotion(PolicyRun('p', 'ws://h:1', 'go', 10.0, (), False, 5.0), None, None, 25.0)


def test_a_policy_that_never_moves_runs_into_the_time_bound_not_a_stall():
    still = np.zeros((5, 14))
    still[:, [6, 13]] = 1.0
    e, motion, _ = run([{'actions': still}], seconds=2.0, stall=0.2)
    assert e.event == 'TIMEOUT' and motion.actions == 50


def test_arms_still_after_moving_is_a_stall():
    moved = rows(5)
    held = np.tile(moved[-1], (5, 1))
    e, _, _ = run([{'actions': moved}, {'actions': held}], seconds=10.0, stall=1.0)
    assert e.event == 'COMPLETED' and 'stalled' in e.detail


@pytest.mark.parametrize(
    'answer,said',
    [
        ({'actions': [[0.0] * 14, [0.0] * 13]}, 'is not an H x 14 array'),
        ({'actions': np.zeros((3, 5))}, 'must be H x 14'),
        ({'actions': np.zeros((0, 14))}, '1 to 1000 rows'),
        ({'actions': np.zeros((1001, 14))}, '1 to 1000 rows'),
        ({'actions': np.full((2, 14), np.nan)}, 'non-finite'),
        ({'actions': np.zeros((2, 14)), 'done': 'false'}, "'done' must be true or false"),
        ({'actions': np.zeros((2, 14)), 'done': np.array([1, 0])}, "'done' must be"),
        ({'actions': np.zeros((2, 14)), 'info': 7}, "'info' must be a string"),
        ({'actions': np.array([['a'] * 14])}, 'must be numbers'),
        ({'act': 1}, "has no 'actions'"),
        ([1, 2], 'must be a dict'),
    ],
)
def test_a_reply_out_of_protocol_is_a_skill_error_naming_the_server(answer, said):
    e, motion, _ = run([answer])
    assert e.event == 'SKILL_ERROR' and said in e.detail, e.detail
    assert 'policy p at ws://h:1 answered out of protocol' in e.detail and motion.actions == 0


def test_a_server_whose_rate_contradicts_the_catalogue_is_refused():
    port = Port()
    connection = Connection([{'actions': rows(3), 'done': True}])
    connection.metadata = {'action_hz': 50.0}
    policy = PolicyRun('p', 'ws://h:1', 'go', 25.0, (), False, 5.0, 1.0)
    motion = PolicyMotion(policy, lambda url: connection, port.views, 25.0)
    e = Engine(port, 25.0).run('run_policy', motion, Options(max_seconds=1.0))
    assert e.event == 'SKILL_ERROR' and 'acts at 50 Hz, but the catalogue says 25 Hz' in e.detail
    assert connection.sent == 0


def test_a_long_sentence_is_clipped():
    e, _, _ = run([{'actions': rows(1), 'done': True, 'info': 'x' * 5000}])
    assert e.event == 'COMPLETED' and len(e.detail) < 400 and '[clipped]' in e.detail
