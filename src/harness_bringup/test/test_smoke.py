"""Two real nodes in a private ROS domain: a service and an action round trip."""

from harness_bringup.domain import claim_domain_id
from harness_bringup.smoke import SmokeServer, run_smoke

from harness_msgs.msg import Event


def test_service_and_action_round_trip():
    claim = claim_domain_id()
    try:
        result = run_smoke(claim.domain_id)
    finally:
        claim.release()
    assert result.step_echo == SmokeServer.STEP
    assert result.event == Event.COMPLETED
    assert result.service_ms > 0 and result.action_ms > 0
