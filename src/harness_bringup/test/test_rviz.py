"""rviz on the live graph: every display of the station's rviz configuration has a publisher in
the running station, the configuration has a tools list, its fixed frame is the root of the TF
tree, and the frames that camera images name exist in TF."""

import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness_bringup.station_graph import StationGraph
from harness_types.wait import wait_future
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import Image
from tf2_msgs.msg import TFMessage

from harness_msgs.srv import Tick
from harness_types import names

RVIZ = Path(__file__).resolve().parents[2] / 'arx_x5_description' / 'rviz' / 'station.rviz'


def displays(config: dict) -> list[dict]:
    return config['Visualization Manager']['Displays']


def topics_of(display: dict) -> list[str]:
    """The topics a display subscribes to (TF: /tf and /tf_static)."""
    if display['Class'] == 'rviz_default_plugins/TF':
        return [names.TF, names.TF_STATIC]
    for key in ('Topic', 'Description Topic'):
        if key in display:
            return [display[key]['Value']]
    return []


@pytest.fixture(scope='module')
def config():
    return yaml.safe_load(RVIZ.read_text())


def test_the_configuration_has_tools_and_every_display_a_known_class(config):
    tools = [t['Class'] for t in config['Visualization Manager']['Tools']]
    assert 'rviz_default_plugins/MoveCamera' in tools and 'rviz_default_plugins/Interact' in tools
    for display in displays(config):
        assert display['Class'].startswith('rviz_default_plugins/'), display['Class']
        assert display['Class'] == 'rviz_default_plugins/Grid' or topics_of(display), display


def test_every_display_has_a_publisher_and_image_frames_are_in_tf(config):
    with StationGraph('rviz_stand_in') as graph:
        graph.reset('lift_cube')
        node = graph.client
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        static, moving, images = [], [], []
        node.create_subscription(TFMessage, names.TF_STATIC, static.append, latched)
        node.create_subscription(TFMessage, names.TF, moving.append, 10)
        node.create_subscription(Image, '/' + names.camera_image('cam_head'), images.append, 2)
        tick = node.create_client(Tick, names.worker_service('tick'))
        state = graph.worker.worker.state()
        command = [*state.left.joints, 1.0, *state.right.joints, 1.0]
        deadline = time.monotonic() + 30
        while (not images or not moving or not static) and time.monotonic() < deadline:
            request = Tick.Request()
            request.command.positions = [float(v) for v in command]
            assert wait_future(tick.call_async(request), 30).accepted
            time.sleep(0.02)

        for display in displays(config):
            for topic in topics_of(display):
                published = node.count_publishers(topic) > 0
                assert published, f'{display["Name"]}: nobody publishes {topic}'

        transforms = [t for m in static + moving for t in m.transforms]
        children = {t.child_frame_id for t in transforms}
        parents = {t.header.frame_id for t in transforms}
        fixed = config['Visualization Manager']['Global Options']['Fixed Frame']
        assert parents - children == {fixed}  # one root: the fixed frame
        assert images[-1].header.frame_id in children
        assert np.isfinite(images[-1].header.stamp.sec)


def test_image_displays_read_what_bags_hold(config):
    """Bags hold each camera's JPEG frames (image_raw/compressed), not raw images: image
    displays on image_raw showed empty panes in every replay. rviz2's image display takes the
    transport from the topic's last name (image_transport's compressed plugin)."""
    from harness_recording.bag import episode_topics

    recorded = {'/' + t.lstrip('/') for t in episode_topics(['cam_head'])}
    images = [d for d in displays(config) if d['Class'] == 'rviz_default_plugins/Image']
    assert images
    for display in images:
        (topic,) = topics_of(display)
        assert topic.endswith('/image_raw/compressed'), topic
        if 'cam_head' in topic:
            assert topic in recorded, sorted(recorded)
