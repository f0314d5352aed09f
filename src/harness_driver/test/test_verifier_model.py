"""The verifier's request: which bound stops its retries and which cuts it in flight."""

import pytest
from harness_driver.budgets import Budgets
from harness_driver.models import ModelReply, ModelRequest
from harness_driver.verifier_model import ask_verifier
from harness_types.config import DriverConfig

VERIFIER, WALL, CELL = (
    "the verifier's bound",
    "the episode's wall budget",
    "the program cell's time",
)


class Asked:
    """A verifier client that keeps the request it was given and answers YES."""

    name = 'm'

    def __init__(self) -> None:
        self.request: ModelRequest | None = None

    def complete(self, request: ModelRequest) -> ModelReply:
        self.request = request
        return ModelReply('YES. It is.', 10, 5)


def asked(bounds) -> ModelRequest:
    client = Asked()
    answer, _ = ask_verifier(
        'the cube is up', client, 'prompt', [], Budgets(DriverConfig(), {}), 0.0, bounds
    )
    assert answer.answered and answer.yes
    return client.request


@pytest.mark.parametrize(
    'bounds,deadline,cut',
    [
        # the wall budget first: no retry after it, and the verifier's bound still cuts
        (
            [(30.0, VERIFIER, True), (5.0, WALL, False), (None, CELL, True)],
            (5, WALL),
            (30, VERIFIER),
        ),
        # in a program: the cell's time is the earliest hard bound
        ([(30.0, VERIFIER, True), (50.0, WALL, False), (12.0, CELL, True)], (12, CELL), (12, CELL)),
        ([(30.0, VERIFIER, True), (5.0, WALL, False), (12.0, CELL, True)], (5, WALL), (12, CELL)),
        (
            [(30.0, VERIFIER, True), (None, WALL, False), (None, CELL, True)],
            (30, VERIFIER),
            (30, VERIFIER),
        ),
    ],
)
def test_the_earliest_bound_stops_retries_and_the_earliest_hard_one_cuts(bounds, deadline, cut):
    request = asked(bounds)
    assert (request.deadline, request.deadline_for) == deadline
    assert (request.cut, request.cut_for) == cut


def test_without_a_hard_bound_nothing_cuts_the_request():
    request = asked([(None, VERIFIER, True), (5.0, WALL, False)])
    assert (request.deadline, request.deadline_for, request.cut) == (5.0, WALL, None)
