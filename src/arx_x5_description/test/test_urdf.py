"""The expanded station URDF against the facts table of ../shared/ARX_X5.md."""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
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
    'gripper': (
        'prismatic',
        'link6',
        'link7',
        (0.08657, 0.024896, -0.0002436),
        (0, 0, 0),
        (0, 1, 0),
        0.0,
        0.044,
    ),
    'gripper_mimic': (
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
    mimic = robot.find(f"joint[@name='{arm}_gripper_mimic']/mimic")
    assert mimic.get('joint') == f'{arm}_gripper'
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


def _commanded(block) -> list[str]:
    return [
        j.get('name') for j in block.findall('joint') if j.find('command_interface') is not None
    ]


def _command_ranges_within_limits(robot, block) -> None:
    """Every command range lies within its URDF joint limits: ros2_control's limit enforcement
    would refuse a command below them (a closed gripper squeezes by the hardware's force
    control, not by a target below 0)."""
    for joint in block.findall('joint'):
        limit = robot.find(f"joint[@name='{joint.get('name')}']/limit")
        command = joint.find('command_interface')
        if command is None:
            continue
        assert command.get('name') == 'position'
        low = float(command.find("param[@name='min']").text)
        high = float(command.find("param[@name='max']").text)
        assert float(limit.get('lower')) <= low < high <= float(limit.get('upper')), joint.get(
            'name'
        )


@pytest.mark.parametrize(
    'hardware,plugin',
    [('mock', 'mock_components/GenericSystem'), ('gazebo', 'gz_ros2_control/GazeboSimSystem')],
)
def test_simulated_ros2_control_block_selectable(hardware, plugin):
    robot = ET.fromstring(station_urdf(ros2_control=hardware))
    (block,) = robot.findall('ros2_control')
    assert block.find('hardware/plugin').text == plugin
    assert len(_commanded(block)) == 14
    _command_ranges_within_limits(robot, block)
    # The mimic finger takes no command; the URDF's <mimic> says whom it follows.
    assert block.find("joint[@name='left_gripper_mimic']/command_interface") is None
    assert block.find("joint[@name='left_gripper_mimic']/param") is None
    assert (robot.find('gazebo') is not None) == (hardware == 'gazebo')


def test_real_arms_are_the_public_arx_plugin_one_system_per_arm():
    """The default real hardware is arx_ros2_control/ArxX5Hardware (fiveages-sim/arx-ros2-
    control): one system per arm on its own CAN bus, with the embodiment's gains. The plugin
    takes a joint whose name holds "gripper" for the gripper and every other for an arm
    joint, so each system lists six arm joints and one gripper joint, and no mimic finger."""
    emb = load_embodiment()
    robot = ET.fromstring(station_urdf(ros2_control='real'))
    blocks = robot.findall('ros2_control')
    assert [b.get('name') for b in blocks] == ['arx_x5_left_arm', 'arx_x5_right_arm']
    for arm, block in zip(('left', 'right'), blocks, strict=True):
        hw = block.find('hardware')
        params = {p.get('name'): p.text for p in hw.findall('param')}
        assert hw.find('plugin').text == 'arx_ros2_control/ArxX5Hardware'
        assert params['arm_config'] == arm.upper()
        assert params['can_interface'] == {'left': 'can0', 'right': 'can1'}[arm]
        assert params['robot_model'] == 'X5'
        # The plugin parses "[a, b, ...]"; the values are arm.kp / arm.kd, one source.
        assert [float(v) for v in params['joint_k_gains'].strip('[]').split(',')] == list(
            emb.real.joint_k_gains
        )
        assert [float(v) for v in params['joint_d_gains'].strip('[]').split(',')] == [
            2.0,
            2.0,
            2.0,
            1.0,
            1.0,
            0.7,
        ]
        assert float(params['gripper_kp']) == 5.0 and float(params['gripper_kd']) == 0.2
        joints = [j.get('name') for j in block.findall('joint')]
        grippers = [j for j in joints if 'gripper' in j.lower()]
        assert grippers == [f'{arm}_gripper']
        assert [j for j in joints if j not in grippers] == emb.arm_joint_names(arm)
        assert _commanded(block) == joints
        _command_ranges_within_limits(robot, block)
        for joint in block.findall('joint'):  # what the plugin exports
            states = [s.get('name') for s in joint.findall('state_interface')]
            assert states[:2] == ['position', 'velocity'], joint.get('name')
    # Every joint the position controller commands is in one of the systems.
    controllers = yaml.safe_load((Path(emb.path).parent / 'controllers.yaml').read_text())[
        'station_position_controller'
    ]['ros__parameters']['joints']
    assert controllers == sum((_commanded(b) for b in blocks), [])


def test_another_real_plugin_by_argument():
    import xacro

    from arx_x5_description.urdf import station_xacro_path

    text = xacro.process_file(
        str(station_xacro_path()),
        mappings={'ros2_control': 'real', 'hardware_plugin': 'my_arx/MySystem'},
    ).toxml()
    plugins = [p.text for p in ET.fromstring(text).findall('ros2_control/hardware/plugin')]
    assert plugins == ['my_arx/MySystem', 'my_arx/MySystem']


def test_a_gripper_joint_the_real_plugin_cannot_tell_is_refused(tmp_path):
    changed = edited_config(tmp_path, 'joint: gripper\n', 'joint: finger\n')
    with pytest.raises(EmbodimentError, match="arm.gripper.joint` must contain 'gripper'"):
        load_embodiment(changed)


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


def test_a_file_is_parsed_once_per_text_and_read_at_every_call(tmp_path):
    assert load_embodiment() is load_embodiment()  # one parse, one shared (frozen) Embodiment
    changed = edited_config(tmp_path, 'upper: 2.618', 'upper: 2.5')
    assert load_embodiment(changed).joints[0].upper == 2.5
    changed.write_text(changed.read_text().replace('upper: 2.5', 'upper: 2.4', 1))
    assert load_embodiment(changed).joints[0].upper == 2.4  # the same file, what it says now


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
