"""The expanded station URDF against the facts table of ../shared/ARX_X5.md."""

import math
import xml.etree.ElementTree as ET

import pytest
from arx_x5_description.embodiment import EmbodimentError, load_embodiment

from arx_x5_description.urdf import station_urdf

PI = math.pi
# joint: (type, parent, child, xyz, rpy, axis, lower, upper) -- the facts table, written out.
FACTS = {
    'joint1': (
        'revolute',
        'base_link',
        'link1',
        (0, 0, 0.0605),
        (0, 0, 0),
        (0, 0, 1),
        -2.094,
        2.618,
    ),
    'joint2': ('revolute', 'link1', 'link2', (0.02, 0, 0.04), (0, 0, 0), (0, 1, 0), 0.0, 3.50),
    'joint3': ('revolute', 'link2', 'link3', (-0.264, 0, 0), (PI, 0, 0), (0, 1, 0), 0.0, 3.14),
    'joint4': (
        'revolute',
        'link3',
        'link4',
        (0.245, 0, -0.056),
        (0, 0, 0),
        (0, 1, 0),
        -1.571,
        1.55,
    ),
    'joint5': (
        'revolute',
        'link4',
        'link5',
        (0.06775, 0.0005, -0.0865),
        (0, 0, 0),
        (0, 0, 1),
        -1.571,
        1.571,
    ),
    'joint6': (
        'revolute',
        'link5',
        'link6',
        (0.02895, 0, 0.0865),
        (-PI, 0, 0),
        (1, 0, 0),
        -1.9635,
        2.0,
    ),
    'joint7': (
        'prismatic',
        'link6',
        'link7',
        (0.08657, 0.024896, -0.0002436),
        (0, 0, 0),
        (0, 1, 0),
        0.0,
        0.044,
    ),
    'joint8': (
        'prismatic',
        'link6',
        'link8',
        (0.08657, -0.0249, -0.00024366),
        (0, 0, 0),
        (0, -1, 0),
        0.0,
        0.044,
    ),
}
MASSES = {
    'base_link': 0.440,
    'link1': 0.067,
    'link2': 1.080,
    'link3': 0.545,
    'link4': 0.117,
    'link5': 0.635,
    'link6': 0.441,
    'link7': 0.065,
    'link8': 0.065,
}


def floats(text):
    return tuple(float(v) for v in text.split())


@pytest.fixture(scope='module')
def robot():
    return ET.fromstring(station_urdf())


@pytest.mark.parametrize('arm', ['left', 'right'])
@pytest.mark.parametrize('joint', sorted(FACTS))
def test_joint_matches_facts(robot, arm, joint):
    kind, parent, child, xyz, rpy, axis, lower, upper = FACTS[joint]
    el = robot.find(f"joint[@name='{arm}_{joint}']")
    assert el is not None, f'{arm}_{joint} missing'
    assert el.get('type') == kind
    assert el.find('parent').get('link') == f'{arm}_{parent}'
    assert el.find('child').get('link') == f'{arm}_{child}'
    assert floats(el.find('origin').get('xyz')) == pytest.approx(xyz, abs=1e-9)
    assert floats(el.find('origin').get('rpy')) == pytest.approx(rpy, abs=1e-9)
    assert floats(el.find('axis').get('xyz')) == pytest.approx(axis, abs=1e-9)
    limit = el.find('limit')
    assert float(limit.get('lower')) == pytest.approx(lower)
    assert float(limit.get('upper')) == pytest.approx(upper)


@pytest.mark.parametrize('arm', ['left', 'right'])
def test_mimic_tcp_and_masses(robot, arm):
    mimic = robot.find(f"joint[@name='{arm}_joint8']/mimic")
    assert mimic.get('joint') == f'{arm}_joint7'
    assert float(mimic.get('multiplier')) == 1.0
    tcp = robot.find(f"joint[@name='{arm}_tcp_joint']")
    assert tcp.get('type') == 'fixed' and tcp.find('child').get('link') == f'{arm}_tcp'
    assert floats(tcp.find('origin').get('xyz')) == pytest.approx((0.145, 0, 0))
    for link, mass in MASSES.items():
        el = robot.find(f"link[@name='{arm}_{link}']/inertial/mass")
        assert float(el.get('value')) == pytest.approx(mass)
    assert sum(MASSES.values()) == pytest.approx(3.45, abs=0.01)


def test_station_mounts_and_cameras(robot):
    left = robot.find("joint[@name='left_mount']/origin")
    right = robot.find("joint[@name='right_mount']/origin")
    assert floats(left.get('xyz')) == pytest.approx((-0.3, -0.45, 0.765))
    assert floats(right.get('xyz')) == pytest.approx((0.3, -0.45, 0.765))
    assert floats(left.get('rpy')) == pytest.approx((0, 0, PI / 2))
    for cam, parent in [
        ('cam_head', 'world'),
        ('cam_left_wrist', 'left_link6'),
        ('cam_right_wrist', 'right_link6'),
    ]:
        assert robot.find(f"joint[@name='{cam}_joint']/parent").get('link') == parent
    assert len(robot.findall('joint')) - len(robot.findall("joint[@type='fixed']")) == 16


@pytest.mark.parametrize(
    'hardware,plugin',
    [
        ('mock', 'mock_components/GenericSystem'),
        ('gazebo', 'gz_ros2_control/GazeboSimSystem'),
        ('real', 'arx_x5_hardware/ArxX5SystemInterface'),
    ],
)
def test_ros2_control_block_selectable(hardware, plugin):
    robot = ET.fromstring(station_urdf(ros2_control=hardware))
    block = robot.find('ros2_control')
    assert block.find('hardware/plugin').text == plugin
    commanded = [
        j.get('name') for j in block.findall('joint') if j.find('command_interface') is not None
    ]
    assert len(commanded) == 14
    assert all(
        j.find('command_interface').get('name') == 'position'
        for j in block.findall('joint')
        if j.find('command_interface') is not None
    )
    # Every command range lies within its URDF joint limits: ros2_control's limit enforcement
    # would refuse a command below them (a closed gripper squeezes by the hardware's force
    # control, not by a target below 0). The mimic finger takes no command.
    for joint in block.findall('joint'):
        limit = robot.find(f"joint[@name='{joint.get('name')}']/limit")
        command = joint.find('command_interface')
        if command is None:
            continue
        low = float(command.find("param[@name='min']").text)
        high = float(command.find("param[@name='max']").text)
        assert float(limit.get('lower')) <= low < high <= float(limit.get('upper')), joint.get(
            'name'
        )
    assert block.find("joint[@name='left_joint8']/command_interface") is None
    assert block.find("joint[@name='left_joint8']/param") is None  # the URDF's <mimic> says it
    assert (robot.find('gazebo') is not None) == (hardware == 'gazebo')


def test_no_ros2_control_by_default(robot):
    assert robot.find('ros2_control') is None
    with pytest.raises(ValueError, match='ros2_control must be one of'):
        station_urdf(ros2_control='fake')


def edited_config(tmp_path, line: str, edit: str):
    """The shipped embodiment file with its first `line` replaced by `edit` (the line must be
    there: a test whose line is gone would check nothing)."""
    text = load_embodiment().path.read_text()
    assert line in text
    changed = tmp_path / 'arx_x5.yaml'
    changed.write_text(text.replace(line, edit, 1))
    return changed


def test_limits_come_from_the_one_yaml(tmp_path):
    changed = edited_config(tmp_path, 'upper: 2.618', 'upper: 2.5')
    robot = ET.fromstring(station_urdf(config=changed))
    assert float(robot.find("joint[@name='left_joint1']/limit").get('upper')) == 2.5
    assert load_embodiment(changed).joints[0].upper == 2.5


def test_bad_embodiment_config_names_the_key(tmp_path):
    bad = edited_config(tmp_path, 'max_joint_jump_rad: 0.3', 'max_joint_jump_rad: fast')
    with pytest.raises(EmbodimentError, match='shield.max_joint_jump_rad'):
        load_embodiment(bad)
    with pytest.raises(EmbodimentError, match='cannot read'):
        load_embodiment(tmp_path / 'missing.yaml')


def test_a_command_is_reached_within_its_tick(tmp_path):
    changed = edited_config(tmp_path, 'interpolation_steps: 8', 'interpolation_steps: 11')
    with pytest.raises(
        EmbodimentError, match=r'`rates.interpolation_steps` \(11\) must be at most'
    ):
        load_embodiment(changed)
    changed = edited_config(tmp_path, 'interpolation_steps: 8', 'interpolation_steps: 10')
    assert load_embodiment(changed).rates.interpolation_steps == 10


@pytest.mark.parametrize(
    ('line', 'bad', 'key'),
    [
        ('msaa_samples: 4', 'msaa_samples: -1', 'sim.msaa_samples'),
        ('msaa_samples: 4', 'msaa_samples: 2.5', 'sim.msaa_samples'),
        ('msaa_samples: 4', 'msaa_samples: true', 'sim.msaa_samples'),
        ('steps_per_tick: 10', 'steps_per_tick: 10.5', 'rates.physics_steps_per_tick'),
        ('interpolation_steps: 8', 'interpolation_steps: 0', 'rates.interpolation_steps'),
        ('width: 640', 'width: 0', 'c.width'),
        ('height: 480', 'height: 479.5', 'c.height'),
    ],
)
def test_counts_are_whole_numbers_not_rounded(tmp_path, line, bad, key):
    changed = edited_config(tmp_path, line, bad)
    with pytest.raises(EmbodimentError, match=rf'`{key}` must be a whole number'):
        load_embodiment(changed)


def test_gripper_mapping_round_trip():
    g = load_embodiment().gripper
    assert g.target(1.0) == pytest.approx(0.044)
    assert g.target(0.0) == pytest.approx(-0.01)
    for o in (0.0, 0.25, 0.8, 1.0):
        assert g.open_fraction(g.target(o)) == pytest.approx(o)
    assert g.open_fraction(0.0) < g.closed_below  # fingers touching read as closed


def test_the_urdf_is_kept_in_the_cache_under_what_it_reads(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    first = station_urdf()
    cached = list((tmp_path / 'cache' / 'harness').glob('station-*.urdf'))
    assert len(cached) == 1 and cached[0].read_text() == first
    assert station_urdf() == first
    assert station_urdf('mock') != first  # other arguments, another entry
    assert len(list((tmp_path / 'cache' / 'harness').glob('station-*.urdf'))) == 2
    # another embodiment file is another input: its own expansion, not the cached one
    config = tmp_path / 'arx_x5.yaml'
    text = load_embodiment().path.read_text()
    config.write_text(text.replace('2.618', '2.6', 1))  # joint1's upper limit
    assert station_urdf(config=config) != station_urdf(config=load_embodiment().path)
    # the same file changed where it is: its contents are an input, not only its path
    config.write_text(text.replace('2.618', '2.5', 1))
    assert 'upper="2.5"' in station_urdf(config=config)
    # a cache that cannot be written is skipped
    monkeypatch.setenv('XDG_CACHE_HOME', '/proc/no-cache-here')
    assert station_urdf() == first
