"""Integration: the state topics go out in tick order from their own thread, `flush` waits for
them, a failed message is logged and the next go on, `close` publishes what waits."""

import dataclasses
import threading
import time

import numpy as np
import pytest
import rclpy
from arx_x5_description.embodiment import load_embodiment
from harness_bringup.domain import claim_domain_id
from harness_types.convert import robot_state_of
from harness_types.tf_tree import TfTree
from harness_worker.state_topics import StateTopics
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from arx_x5_description.urdf import station_urdf
from harness_msgs.srv import Tick
from harness_worker import state_topics


@pytest.fixture
def station():
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    emb = load_embodiment()
    publisher = Node('state_topics_test', context=context)
    topics = StateTopics(publisher, emb.all_joint_names(), TfTree(station_urdf()))
    listener = Node('state_topics_listener', context=context)
    clocks, joints = [], []
    listener.create_subscription(Clock, '/clock', clocks.append, 100)
    listener.create_subscription(JointState, '/joint_states', joints.append, 100)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(listener)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    deadline = time.monotonic() + 10
    while topics.joint_states.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    yield topics, clocks, joints
    topics.close()
    executor.shutdown()
    rclpy.shutdown(context=context)
    claim.release()


def states(n: int, first: int = 1):
    empty = robot_state_of(Tick.Response().state)
    for step in range(first, first + n):
        left = dataclasses.replace(empty.left, joints=np.full(6, 0.01 * step))
        yield dataclasses.replace(empty, left=left, step=step, time=step / 25)


def received(messages: list, n: int) -> list:
    deadline = time.monotonic() + 10
    while len(messages) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return messages


def seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def test_in_tick_order_and_flush_waits_for_them(station):
    topics, clocks, joints = station
    sent = list(states(40))
    for state in sent:
        topics.put(state)
    topics.flush()
    assert topics._states.unfinished_tasks == 0  # every state put is published
    got = received(clocks, 40)
    assert [round(seconds(c.clock), 6) for c in got] == [round(s.time, 6) for s in sent]
    got = received(joints, 40)
    assert [round(j.position[0], 6) for j in got] == [round(s.left.joints[0], 6) for s in sent]


def test_a_failed_message_is_logged_and_the_next_go_out(station, monkeypatch):
    topics, clocks, _ = station
    publish, failed = topics.clock.publish, []

    def once_broken(data):
        if not failed:
            failed.append(data)
            raise RuntimeError('the middleware refused')
        publish(data)

    monkeypatch.setattr(topics.clock, 'publish', once_broken)
    for state in states(3):
        topics.put(state)
    topics.flush()
    assert len(failed) == 1
    assert [round(seconds(c.clock), 6) for c in received(clocks, 2)] == [0.08, 0.12]


def test_close_publishes_what_waits_and_a_closed_one_refuses(station, monkeypatch):
    topics, clocks, _ = station
    gate = threading.Event()
    publish = topics.clock.publish
    monkeypatch.setattr(topics.clock, 'publish', lambda data: (gate.wait(), publish(data)))
    for state in states(5):
        topics.put(state)
    gate.set()
    topics.close()
    assert len(received(clocks, 5)) == 5
    with pytest.raises(RuntimeError, match='closed'):
        topics.put(next(states(1)))


def test_a_tick_waits_when_the_backlog_is_full(station, monkeypatch):
    topics, clocks, _ = station
    gate = threading.Event()
    publish = topics.clock.publish
    monkeypatch.setattr(topics.clock, 'publish', lambda data: (gate.wait(), publish(data)))
    n = state_topics.STATE_BACKLOG + 2  # one being published, a full queue, one more
    putter = threading.Thread(target=lambda: [topics.put(s) for s in states(n)])
    putter.start()
    deadline = time.monotonic() + 10
    while not topics._states.full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert topics._states.full() and putter.is_alive()
    gate.set()
    putter.join()
    topics.flush()
    assert len(received(clocks, n)) == n
