"""Build the shield's limits from the embodiment config (arx_x5_description/config/arx_x5.yaml)."""

from __future__ import annotations

import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment

from harness_shield.shield import ArmLayout, ShieldConfig


def shield_config(emb: Embodiment) -> ShieldConfig:
    """Limits for the 14-number command [left j1..j6, left gripper, right j1..j6, right gripper]."""
    names = tuple(emb.command_layout)
    arms, lower, upper = [], [], []
    for k, arm in enumerate(ARMS):
        base = k * 7
        arms.append(ArmLayout(arm, tuple(range(base, base + 6)), base + 6))
        lower += [*emb.lower, 0.0]
        upper += [*emb.upper, 1.0]
    s = emb.shield
    return ShieldConfig(
        names=names,
        arms=tuple(arms),
        lower=np.array(lower),
        upper=np.array(upper),
        joint_limit_tolerance_rad=s.joint_limit_tolerance_rad,
        max_joint_jump_rad=s.max_joint_jump_rad,
        max_cartesian_jump_m=s.max_cartesian_jump_m,
        workspace_min=np.array(s.workspace_min),
        workspace_max=np.array(s.workspace_max),
        max_lead_rad=s.max_lead_rad,
        collision_tolerance_m=s.collision_tolerance_m,
    )
