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
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / 'config' / 'harness.yaml')
# The SDK's server speaks the Foxglove WebSocket protocol as `foxglove.sdk.v1` (this version)
# or `foxglove.websocket.v1`; a client offers both, as the Foxglove app does.
SUBPROTOCOLS = ['foxglove.sdk.v1', 'foxglove.websocket.v1']
MESSAGE_DATA = 0x01  # binary opcode: subscription id (u32), receive time (u64), payload


def test_a_foxglove_client_receives_joint_states_and_camera_frames(tmp_path):
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

    channels, received = {}, {}
    with connect(f'ws://127.0.0.1:{port}', subprotocols=SUBPROTOCOLS, open_timeout=10) as ws:
        assert ws.subprotocol in SUBPROTOCOLS
        subscribed = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                frame = ws.recv(timeout=2)
            except TimeoutError:
                if proc.poll() is not None:
                    break
                continue
            if isinstance(frame, str):
                message = json.loads(frame)
                if message.get('op') == 'advertise':
                    for channel in message['channels']:
                        channels[channel['topic']] = channel
                    wanted = [
                        c
                        for t, c in channels.items()
                        if t in ('/joint_states', '/cameras/cam_head/image_raw/compressed')
                        and c['id'] not in subscribed.values()
                    ]
                    subscriptions = [
                        {'id': len(subscribed) + k, 'channelId': c['id']}
                        for k, c in enumerate(wanted)
                    ]
                    for s, c in zip(subscriptions, wanted, strict=True):
                        subscribed[c['topic']] = s['id']
                    if subscriptions:
                        ws.send(json.dumps({'op': 'subscribe', 'subscriptions': subscriptions}))
            elif frame[0] == MESSAGE_DATA:
                subscription, _stamp = struct.unpack_from('<IQ', frame, 1)
                topic = next(t for t, i in subscribed.items() if i == subscription)
                received.setdefault(topic, []).append(bytes(frame[13:]))
                if len(received) == 2 and all(len(v) >= 2 for v in received.values()):
                    break
    proc.wait(timeout=120)
    assert proc.returncode == 0, ''.join(lines)

    joint_states = channels['/joint_states']
    assert (
        joint_states['encoding'] == 'cdr'
        and joint_states['schemaName'] == 'sensor_msgs/msg/JointState'
    )
    store = get_typestore(Stores.ROS2_KILTED)
    state = store.deserialize_cdr(received['/joint_states'][-1], 'sensor_msgs/msg/JointState')
    assert 'left_joint1' in list(state.name) and len(state.position) == len(state.name)
    frame = store.deserialize_cdr(
        received['/cameras/cam_head/image_raw/compressed'][0], 'sensor_msgs/msg/CompressedImage'
    )
    assert frame.format == 'jpeg' and bytes(frame.data[:2]) == b'\xff\xd8'
