"""`harness run --foxglove`: a WebSocket client speaking the Foxglove protocol connects to a
running scripted episode, subscribes, and receives /joint_states (CDR that decodes as a
JointState) and a camera's JPEG frames."""

import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from rosbags.typesys import Stores, get_typestore
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / 'config' / 'harness.yaml')
# The SDK's server (foxglove-sdk 0.30) speaks the Foxglove WebSocket protocol as
# `foxglove.sdk.v1` alone: a client that offers only `foxglove.websocket.v1` is refused (HTTP
# 400). This client offers both, as the Foxglove app does.
SUBPROTOCOLS = ['foxglove.sdk.v1', 'foxglove.websocket.v1']
MESSAGE_DATA = 0x01  # binary opcode: subscription id (u32), receive time (u64), payload


def _start(tmp_path):
    env = dict(os.environ, MUJOCO_GL='egl')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', '--config', CONFIG, 'run', 'lift_cube']
        + ['--model', 'scripted', '--out', str(tmp_path), '--foxglove', '0'],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines, port = [], None
    deadline = time.monotonic() + 120
    while port is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r'ws://localhost:(\d+)', line)
        port = int(found.group(1)) if found else None
    assert port, ''.join(lines)
    rest = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    rest.start()
    return proc, port, lines


class Client:
    """A Foxglove WebSocket client that subscribes to every channel it is told of matching
    `wanted` (all when None) and keeps what arrives, by topic."""

    def __init__(self, port: int, wanted=None) -> None:
        self._connection = connect(
            f'ws://127.0.0.1:{port}', subprotocols=SUBPROTOCOLS, open_timeout=10
        )
        self.ws = self._connection.__enter__()
        assert self.ws.subprotocol in SUBPROTOCOLS
        self.wanted = wanted
        self.channels, self.subscribed, self.received = {}, {}, {}

    def pump(self, until, seconds: float = 60.0, proc=None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not until(self):
            try:
                frame = self.ws.recv(timeout=2)
            except TimeoutError:
                if proc is not None and proc.poll() is not None:
                    return
                continue
            except ConnectionClosed:  # the episode ended and its server with it
                return
            if isinstance(frame, str):
                message = json.loads(frame)
                if message.get('op') == 'advertise':
                    self._subscribe(message['channels'])
            elif frame[0] == MESSAGE_DATA:
                subscription, _stamp = struct.unpack_from('<IQ', frame, 1)
                topic = next(t for t, i in self.subscribed.items() if i == subscription)
                self.received.setdefault(topic, []).append(bytes(frame[13:]))

    def _subscribe(self, channels) -> None:
        for channel in channels:
            self.channels[channel['topic']] = channel
        fresh = [
            c
            for t, c in self.channels.items()
            if (self.wanted is None or t in self.wanted) and t not in self.subscribed
        ]
        subscriptions = []
        for c in fresh:
            self.subscribed[c['topic']] = len(self.subscribed)
            subscriptions.append({'id': self.subscribed[c['topic']], 'channelId': c['id']})
        if subscriptions:
            self.ws.send(json.dumps({'op': 'subscribe', 'subscriptions': subscriptions}))

    def decoded(self, topic: str) -> list:
        """Every message of `topic` decoded by Foxglove's own ros2msg decoder (mcap_ros2) from
        the schema the server advertised."""
        from mcap_ros2._dynamic import generate_dynamic

        channel = self.channels[topic]
        assert channel['encoding'] == 'cdr' and channel['schemaEncoding'] == 'ros2msg'
        decode = generate_dynamic(channel['schemaName'], channel['schema'])[channel['schemaName']]
        return [decode(data) for data in self.received.get(topic, [])]

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def test_a_foxglove_client_receives_joint_states_and_camera_frames(tmp_path):
    """Every live message decodes with Foxglove's own decoder (the schemas were written ROS 1
    style, `time stamp`, which mcap_ros2 cannot read), and a client that joins after the
    first tick still gets the latched /tf_static and robot description (a 3D panel shows the
    robot)."""
    proc, port, lines = _start(tmp_path)
    early = Client(port)
    camera = '/cameras/cam_head/image_raw/compressed'

    def enough(c):
        return (
            len(c.received.get('/joint_states', [])) >= 2 and len(c.received.get(camera, [])) >= 2
        )

    early.pump(enough, proc=proc)
    # The first ticks went out: a late client now.
    late = Client(port, wanted={'/tf_static', '/robot_description'})
    late.pump(lambda c: len(c.received) == 2, seconds=30, proc=proc)
    early.pump(lambda c: False, seconds=1, proc=proc)  # a little more of everything
    early.close()
    late.close()
    proc.wait(timeout=120)
    assert proc.returncode == 0, ''.join(lines)

    joint_states = early.channels['/joint_states']
    assert joint_states['schemaName'] == 'sensor_msgs/msg/JointState'
    store = get_typestore(Stores.ROS2_KILTED)
    state = store.deserialize_cdr(early.received['/joint_states'][-1], 'sensor_msgs/msg/JointState')
    assert 'left_joint1' in list(state.name) and len(state.position) == len(state.name)
    frame = store.deserialize_cdr(early.received[camera][0], 'sensor_msgs/msg/CompressedImage')
    assert frame.format == 'jpeg' and bytes(frame.data[:2]) == b'\xff\xd8'
    for topic in early.received:  # every topic that sent something, /clock and camera_info too
        for message in early.decoded(topic):
            assert message is not None
    (decoded,) = early.decoded('/joint_states')[-1:]
    assert list(decoded.name) == list(state.name)
    assert 0 <= decoded.header.stamp.nanosec < 1_000_000_000
    assert {'/clock', '/joint_states', camera} <= set(early.received), sorted(early.received)
    # The late client: the latched topics, though published before it came.
    transforms = [t for m in late.decoded('/tf_static') for t in m.transforms]
    assert transforms and all(t.child_frame_id for t in transforms)
    (description,) = late.decoded('/robot_description')[-1:]
    assert '<robot' in description.data
