"""`harness replay`: a scripted episode's bag published into a live graph, received with rclpy:
every /joint_states message of the bag, in order, with /clock, and the latched description."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import rclpy
from harness_bringup.cli import main
from harness_bringup.domain import claim_domain_id
from harness_bringup.processes import child_environment
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String

os.environ.setdefault('MUJOCO_GL', 'egl')
CONFIG = str(Path(__file__).resolve().parents[3] / 'config' / 'harness.yaml')


def seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def test_replay_delivers_every_joint_state_in_order_with_clock(tmp_path):
    code = main(
        ['--config', CONFIG, 'run', 'lift_cube', '--model', 'scripted', '--out', str(tmp_path)]
    )
    assert code == 0
    (folder,) = tmp_path.iterdir()
    store = get_typestore(Stores.ROS2_KILTED)
    with Reader(folder / 'bag') as bag:
        total = sum(c.msgcount for c in bag.connections)
        recorded = [
            seconds(store.deserialize_cdr(raw, c.msgtype).header.stamp)
            for c, _, raw in bag.messages()
            if c.topic == '/joint_states'
        ]
    assert len(recorded) > 50

    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    node = rclpy.create_node('replay_listener', context=context)
    states, clocks, descriptions = [], [], []
    reliable = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(JointState, '/joint_states', states.append, reliable)
    node.create_subscription(Clock, '/clock', clocks.append, reliable)
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(String, '/robot_description', descriptions.append, latched)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        replay = subprocess.run(
            [sys.executable, '-m', 'harness_bringup.cli', 'replay', str(folder)]
            + ['--rate', '4', '--delay', '2'],
            env=child_environment(claim.domain_id),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert f'published {total} messages' in replay.stdout, replay.stdout
        deadline = time.monotonic() + 10
        while len(states) < len(recorded) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        claim.release()
    assert [seconds(s.header.stamp) for s in states] == recorded
    assert clocks and seconds(clocks[-1].clock) >= recorded[-1]
    assert descriptions and '<robot' in descriptions[0].data
    summary = json.loads((folder / 'summary.json').read_text())
    assert len(states) == summary['env_steps'] + 1

    # Ctrl-C while it plays: exit 130, as its help says (rclpy's own handler had shut the
    # context down under it: a traceback and exit 1).
    elsewhere = claim_domain_id()
    looping = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', 'replay', str(folder), '--loop']
        + ['--delay', '0'],
        env=child_environment(elsewhere.domain_id),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in looping.stdout:  # the first pass has ended: it is playing the second
        if line.startswith('[harness] published'):
            break
    looping.send_signal(signal.SIGINT)
    out, err = looping.communicate(timeout=60)
    elsewhere.release()
    assert looping.returncode == 130, out + err
    assert 'Traceback' not in err, err
