"""Property-based: the shield never edits, rejects every malformed command, always says why."""

import numpy as np
from harness_shield.shield import Shield
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import linear_fk

finite = st.floats(min_value=-4.0, max_value=4.0, allow_nan=False)
anything = st.floats(allow_nan=True, allow_infinity=True)


def make_shield(config):
    return Shield(config, linear_fk)


def measured_state():
    q = np.zeros(14)
    q[[1, 2, 8, 9]] = 0.1
    q[[6, 13]] = 1.0
    return q


@settings(max_examples=300, deadline=None)
@given(st.lists(anything, min_size=14, max_size=14))
def test_command_is_never_modified(config, values):
    shield = make_shield(config)
    command = np.array(values)
    before = command.tobytes()
    verdict = shield.check(command, measured_state())
    assert verdict.command is command
    assert command.tobytes() == before


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=14, max_size=14))
def test_accepted_command_is_bit_identical(config, values):
    shield = make_shield(config)
    measured = measured_state()
    command = measured + np.array(values) * 0.05  # small moves: many are accepted
    snapshot = command.copy()
    verdict = shield.check(command, measured)
    assert verdict.command is command
    assert command.tobytes() == snapshot.tobytes()
    if verdict.accepted:
        assert verdict.reasons == ()
        assert shield.last_accepted.tobytes() == snapshot.tobytes()
    else:
        assert len(verdict.reasons) >= 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(finite, min_size=14, max_size=14),
    st.integers(0, 13),
    st.sampled_from([np.nan, np.inf, -np.inf]),
)
def test_any_non_finite_entry_is_rejected(config, values, index, bad):
    command = np.array(values)
    command[index] = bad
    verdict = make_shield(config).check(command, measured_state())
    assert not verdict.accepted
    assert any(r.check == 'finite' for r in verdict.reasons)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=40).filter(lambda v: len(v) != 14))
def test_any_wrong_length_is_rejected(config, values):
    verdict = make_shield(config).check(values, measured_state())
    assert not verdict.accepted
    assert verdict.reasons[0].check == 'shape'


@settings(max_examples=300, deadline=None)
@given(st.lists(anything, min_size=0, max_size=20))
def test_every_rejection_has_a_reason(config, values):
    verdict = make_shield(config).check(values, measured_state())
    assert verdict.accepted == (len(verdict.reasons) == 0)
    assert all(r.message for r in verdict.reasons)
