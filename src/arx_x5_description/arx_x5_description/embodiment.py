"""The embodiment numbers of the station, read from config/arx_x5.yaml (the one source)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# libyaml's parser where PyYAML has it (the same documents, 8x faster): every node of every
# process of an episode reads this file.
YAML_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)

ARMS = ('left', 'right')


class EmbodimentError(ValueError):
    """The embodiment YAML is missing a value or has one of the wrong kind."""


@dataclass(frozen=True)
class JointLimit:
    name: str
    lower: float
    upper: float
    velocity: float
    effort: float


@dataclass(frozen=True)
class Gripper:
    joint: str
    mimic_joint: str
    lower: float
    upper: float
    actuator_lower: float
    scale: float
    open_above: float
    closed_below: float

    def target(self, open_fraction: float) -> float:
        """Actuator target q7 (m) for an open fraction (1 = open); 0 squeezes below the range."""
        return self.actuator_lower + self.scale * open_fraction

    def open_fraction(self, q7: float) -> float:
        """Measured open fraction for a finger position q7, the inverse of `target`, in [0, 1]."""
        return min(1.0, max(0.0, (q7 - self.actuator_lower) / self.scale))


@dataclass(frozen=True)
class ShieldLimits:
    max_joint_jump_rad: float
    max_cartesian_jump_m: float
    joint_limit_tolerance_rad: float
    workspace_min: tuple[float, float, float]
    workspace_max: tuple[float, float, float]
    max_lead_rad: float
    collision_tolerance_m: float
    max_contact_force_n: float


@dataclass(frozen=True)
class Camera:
    name: str
    parent: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    width: int
    height: int
    fovy_deg: float


@dataclass(frozen=True)
class Rates:
    control_hz: float
    physics_hz: float
    physics_steps_per_tick: int
    interpolation_steps: int


@dataclass(frozen=True)
class SimParams:
    kp: tuple[float, ...]
    damping: tuple[float, ...]
    armature: float
    gripper_kp: float
    gripper_force: float
    finger_friction: tuple[float, float, float]
    msaa_samples: int


@dataclass(frozen=True)
class RealArms:
    """The real arms' ros2_control hardware: one system of `plugin` per arm on its CAN bus."""

    plugin: str
    robot_model: str
    can_interface: dict[str, str]  # arm -> CAN interface
    joint_k_gains: tuple[float, ...]
    joint_d_gains: tuple[float, ...]
    gripper_kp: float
    gripper_kd: float


@dataclass(frozen=True)
class Embodiment:
    robot: str
    joints: tuple[JointLimit, ...]
    gripper: Gripper
    tcp_offset: float
    mounts: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    table_top_z: float
    table_x: tuple[float, float]
    table_y: tuple[float, float]
    cameras: dict[str, Camera]
    rates: Rates
    shield: ShieldLimits
    sim: SimParams
    real: RealArms
    home_tolerance_m: float
    home_tolerance_rad: float
    path: Path

    def arm_joint_names(self, arm: str) -> list[str]:
        """URDF names of one arm's six joints, e.g. `left_joint1`."""
        return [f'{arm}_{j.name}' for j in self.joints]

    @property
    def command_layout(self) -> list[str]:
        """Names of the 14 command entries: each arm's six joints, then its gripper."""
        layout: list[str] = []
        for arm in ARMS:
            layout += self.arm_joint_names(arm) + [f'{arm}_gripper']
        return layout

    def all_joint_names(self) -> list[str]:
        """The 16 URDF joints of the station (with both fingers of each gripper)."""
        names: list[str] = []
        for arm in ARMS:
            names += self.arm_joint_names(arm)
            names += [f'{arm}_{self.gripper.joint}', f'{arm}_{self.gripper.mimic_joint}']
        return names

    @property
    def lower(self) -> list[float]:
        return [j.lower for j in self.joints]

    @property
    def upper(self) -> list[float]:
        return [j.upper for j in self.joints]


def default_config_path() -> Path:
    """config/arx_x5.yaml of the installed package (found through the ament index)."""
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('arx_x5_description')) / 'config' / 'arx_x5.yaml'


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, node: Any, dotted: str) -> Any:
        value = node
        for key in dotted.split('.'):
            if not isinstance(value, dict) or key not in value:
                raise EmbodimentError(f'{self.path}: missing `{dotted}`')
            value = value[key]
        return value

    def number(self, node: Any, dotted: str) -> float:
        value = self.get(node, dotted)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise EmbodimentError(f'{self.path}: `{dotted}` must be a finite number, got {value!r}')
        return float(value)

    def text(self, node: Any, dotted: str) -> str:
        value = self.get(node, dotted)
        if not isinstance(value, str) or not value.strip():
            raise EmbodimentError(
                f'{self.path}: `{dotted}` must be a non-empty string, got {value!r}'
            )
        return value

    def count(self, node: Any, dotted: str, minimum: int = 0) -> int:
        """A whole number of at least `minimum` (not rounded from a fraction)."""
        value = self.get(node, dotted)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise EmbodimentError(
                f'{self.path}: `{dotted}` must be a whole number >= {minimum}, got {value!r}'
            )
        return value

    def numbers(self, node: Any, dotted: str, length: int | None = None) -> tuple[float, ...]:
        value = self.get(node, dotted)
        if not isinstance(value, list) or (length is not None and len(value) != length):
            want = f'a list of {length} numbers' if length else 'a list of numbers'
            raise EmbodimentError(f'{self.path}: `{dotted}` must be {want}, got {value!r}')
        return tuple(self.number({'v': v}, 'v') for v in value)


def load_embodiment(path: Path | str | None = None) -> Embodiment:
    """Read and check the embodiment YAML; every problem names the file and the key. The file
    is read at every call; what it says is parsed once per text (an episode's processes ask
    for it several times each, ~1 ms a parse). The Embodiment is frozen and shared."""
    path = Path(path) if path else default_config_path()
    try:
        text = path.read_text()
    except OSError as exc:
        raise EmbodimentError(f'cannot read embodiment config {path}: {exc.strerror}') from exc
    return _embodiment_of(text, path)


@functools.lru_cache(maxsize=8)
def _embodiment_of(text: str, path: Path) -> Embodiment:
    """The Embodiment the YAML `text` of the file `path` says (EmbodimentError, not kept, when
    it is not one)."""
    try:
        raw = yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise EmbodimentError(f'{path}: not valid YAML: {exc}') from exc
    r = _Reader(path)
    joints = []
    for i, j in enumerate(r.get(raw, 'arm.joints')):
        where = {'j': j}
        lim = JointLimit(
            str(r.get(where, 'j.name')),
            r.number(where, 'j.lower'),
            r.number(where, 'j.upper'),
            r.number(where, 'j.velocity'),
            r.number(where, 'j.effort'),
        )
        if lim.lower >= lim.upper:
            raise EmbodimentError(f'{path}: arm.joints[{i}] ({lim.name}) has lower >= upper')
        joints.append(lim)
    if len(joints) != 6:
        raise EmbodimentError(f'{path}: arm.joints must list 6 joints, got {len(joints)}')
    g = r.get(raw, 'arm.gripper')
    gripper = Gripper(
        str(r.get(g, 'joint')),
        str(r.get(g, 'mimic_joint')),
        r.number(g, 'lower'),
        r.number(g, 'upper'),
        r.number(g, 'actuator_lower'),
        r.number(g, 'scale'),
        r.number(g, 'open_above'),
        r.number(g, 'closed_below'),
    )
    mounts = {
        arm: (
            r.numbers(raw, f'station.arms.{arm}.xyz', 3),
            r.numbers(raw, f'station.arms.{arm}.rpy', 3),
        )
        for arm in ARMS
    }
    cameras = {}
    for name, cam in r.get(raw, 'station.cameras').items():
        c = {'c': cam}
        cameras[name] = Camera(
            name,
            str(r.get(c, 'c.parent')),
            r.numbers(c, 'c.xyz', 3),
            r.numbers(c, 'c.rpy', 3),
            r.count(c, 'c.width', 1),
            r.count(c, 'c.height', 1),
            r.number(c, 'c.fovy_deg'),
        )
    rates = Rates(
        r.number(raw, 'rates.control_hz'),
        r.number(raw, 'rates.physics_hz'),
        r.count(raw, 'rates.physics_steps_per_tick', 1),
        r.count(raw, 'rates.interpolation_steps', 1),
    )
    if rates.interpolation_steps > rates.physics_steps_per_tick:
        # Beyond the tick the command would never be reached: the next tick starts again from
        # the measured state, so the arm would get a fraction of every command.
        raise EmbodimentError(
            f'{path}: `rates.interpolation_steps` ({rates.interpolation_steps}) must be at most '
            f'`rates.physics_steps_per_tick` ({rates.physics_steps_per_tick})'
        )
    shield = ShieldLimits(
        r.number(raw, 'shield.max_joint_jump_rad'),
        r.number(raw, 'shield.max_cartesian_jump_m'),
        r.number(raw, 'shield.joint_limit_tolerance_rad'),
        r.numbers(raw, 'shield.workspace_min', 3),
        r.numbers(raw, 'shield.workspace_max', 3),  # type: ignore[arg-type]
        r.number(raw, 'shield.max_lead_rad'),
        r.number(raw, 'shield.collision_tolerance_m'),
        r.number(raw, 'shield.max_contact_force_n'),
    )
    sim = SimParams(
        r.numbers(raw, 'sim.kp', 6),
        r.numbers(raw, 'sim.damping', 6),
        r.number(raw, 'sim.armature'),
        r.number(raw, 'sim.gripper_kp'),
        r.number(raw, 'sim.gripper_force'),
        r.numbers(raw, 'sim.finger_friction', 3),  # type: ignore[arg-type]
        r.count(raw, 'sim.msaa_samples'),
    )
    real = RealArms(
        r.text(raw, 'real.plugin'),
        r.text(raw, 'real.robot_model'),
        {arm: r.text(raw, f'real.can_interface.{arm}') for arm in ARMS},
        r.numbers(raw, 'arm.kp', 6),
        r.numbers(raw, 'arm.kd', 6),
        r.number(raw, 'real.gripper_kp'),
        r.number(raw, 'real.gripper_kd'),
    )
    if 'gripper' not in gripper.joint.lower():
        # The ARX plugin takes every joint whose name lacks "gripper" for an arm joint: a
        # finger joint named otherwise would be driven as a seventh arm joint.
        raise EmbodimentError(
            f"{path}: `arm.gripper.joint` must contain 'gripper' (the real arm's ros2_control "
            f'plugin finds the gripper by it), got {gripper.joint!r}'
        )
    return Embodiment(
        robot=str(r.get(raw, 'robot')),
        joints=tuple(joints),
        gripper=gripper,
        tcp_offset=r.number(raw, 'arm.tcp_offset'),
        mounts=mounts,
        table_top_z=r.number(raw, 'station.table.top_z'),
        table_x=r.numbers(raw, 'station.table.x', 2),  # type: ignore[arg-type]
        table_y=r.numbers(raw, 'station.table.y', 2),  # type: ignore[arg-type]
        cameras=cameras,
        rates=rates,
        shield=shield,
        sim=sim,
        real=real,
        home_tolerance_m=r.number(raw, 'station.home_tolerance_m'),
        home_tolerance_rad=math.radians(r.number(raw, 'station.home_tolerance_deg')),
        path=path,
    )
