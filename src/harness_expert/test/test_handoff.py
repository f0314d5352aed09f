"""The hand-off between infer calls and the script's thread, with toy scripts (no robot)."""

import threading

import numpy as np
import pytest
from harness_expert.handoff import Handoff


def test_turns_alternate_and_the_script_sees_each_observation():
    seen = []

    def script(obs, send):
        seen.append(obs['n'])
        for k in range(3):
            obs = send(np.full((2, 14), k))
            seen.append(obs['n'])
        return 'three chunks'

    handoff = Handoff(script)
    turns = [handoff.turn({'n': n}) for n in range(4)]
    assert [t.done for t in turns] == [False, False, False, True]
    assert [t.rows[0, 0] for t in turns[:3]] == [0, 1, 2]
    assert turns[-1].info == 'three chunks'
    assert seen == [0, 1, 2, 3]
    again = handoff.turn({'n': 4})  # over is over, with the same last sentence
    assert again.done and again.info == 'three chunks'
    assert seen == [0, 1, 2, 3]


def test_an_exception_ends_the_run_and_is_raised_to_the_caller():
    def script(obs, send):
        send(np.zeros((1, 14)))
        raise KeyError('a bug')

    handoff = Handoff(script)
    assert not handoff.turn({}).done
    with pytest.raises(KeyError, match='a bug'):
        handoff.turn({})
    assert handoff.finished
    with pytest.raises(KeyError, match='a bug'):  # and on every later turn
        handoff.turn({})


def test_close_stops_a_script_waiting_for_an_observation():
    finished = threading.Event()

    def script(obs, send):
        try:
            send(np.zeros((1, 14)))
        finally:
            finished.set()
        return 'never'

    handoff = Handoff(script)
    handoff.turn({})
    handoff.close()
    assert finished.wait(2.0)
    assert handoff.turn({}).done
    assert handoff.turn({}).info == 'the run was closed'
