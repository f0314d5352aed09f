"""What the graph's child processes (kernel, recorder) inherit: the claimed ROS domain, the
discovery profile, and none of the model service's secrets."""

from __future__ import annotations

import os

from harness_bringup.domain import PROFILE_VARIABLE, use_discovery_profile

# A child of the graph never talks to the model service.
SECRETS = ('ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL')


def child_environment(domain_id: int) -> dict[str, str]:
    use_discovery_profile()
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    env['ROS_DOMAIN_ID'] = str(domain_id)
    if PROFILE_VARIABLE in os.environ:
        env[PROFILE_VARIABLE] = os.environ[PROFILE_VARIABLE]
    return env
