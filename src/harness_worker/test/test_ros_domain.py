from harness_worker.ros_domain import claim_domain_id


def test_claims_are_exclusive_and_released(tmp_path):
    first = claim_domain_id(tmp_path)
    second = claim_domain_id(tmp_path)
    assert first.domain_id != second.domain_id
    first.release()
    third = claim_domain_id(tmp_path)
    assert third.domain_id == first.domain_id
    second.release()
    third.release()
