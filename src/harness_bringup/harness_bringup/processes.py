"""What the graph's child processes (kernel, recorder) inherit: the claimed ROS domain, the
discovery profile, numerics on one thread, and none of the model service's secrets."""

from __future__ import annotations

import os

from harness_bringup.domain import PROFILE_VARIABLE, use_discovery_profile

# A child of the graph never talks to the model service.
SECRETS = ('ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL')
# numpy's OpenBLAS on one thread (unless the user set it): with a thread per core it splits
# perception's large products (a pass lifts ~330k pixels) and then waits for a core that the
# episode's other processes hold. A kernel's first `pixels` pass in an episode: 114-125 ->
# 92-106 ms, its products alone 36-38 -> 15-28 ms (interleaved lift_cube episodes).
ONE_THREAD = {'OPENBLAS_NUM_THREADS': '1'}


def child_environment(domain_id: int) -> dict[str, str]:
    use_discovery_profile()
    env = ONE_THREAD | {k: v for k, v in os.environ.items() if k not in SECRETS}
    env['ROS_DOMAIN_ID'] = str(domain_id)
    if PROFILE_VARIABLE in os.environ:
        env[PROFILE_VARIABLE] = os.environ[PROFILE_VARIABLE]
    return env
