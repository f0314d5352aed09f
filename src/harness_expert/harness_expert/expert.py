"""The scripted expert served as a policy: the policy the project ships, standing in for a learned
visuomotor policy (pi0-style) behind the same protocol (harness_policy.observation).

It acts only from what a policy receives: the instruction (`prompt`, read by
harness_expert.instruction), the colour and depth images with their calibration (read by the
project's pixel perception) and the measured joints; it knows the robot's own model
(embodiment, URDF, kinematics) and nothing of the simulator. One instance serves one
connection, that is one policy run: `infer` answers each observation with the next chunk of
absolute joint targets, and with done=True (a chunk holding the pose, and a sentence) once its
script is over, gave up, or did not understand the instruction; every later observation is
answered the same way, with the same sentence.

What is not a normal end raises from `infer`, so that the policy server answers with an error
and the harness ends the run naming the policy: an observation out of protocol raises
ObservationError, a fault of the script itself (a bug) RuntimeError naming its cause.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from arx_x5_description.embodiment import Embodiment, load_embodiment
from harness_kernel.contact import ContactSkills
from harness_policy.observation import PROMPT, ObservationError, reply
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf
from harness_expert.actuation import Actuation
from harness_expert.handoff import Handoff
from harness_expert.instruction import InstructionError, parse
from harness_expert.locating import LocateError, Locator
from harness_expert.observed import check_observation, start_command
from harness_expert.scripts import ScriptError, TaskScript, checked, fail


class ScriptedExpert:
    """A policy server's policy: `infer(obs) -> reply`, `reset()` between runs."""

    def __init__(self, emb: Embodiment | None = None, urdf: str | None = None, chunk: int = 10):
        if chunk < 1:
            raise ValueError(f'chunk must be at least 1, got {chunk}')
        self.emb = emb if emb is not None else load_embodiment()
        self.urdf = urdf if urdf is not None else station_urdf()
        self.chunk = chunk
        self.kinematics = StationKinematics(self.urdf, self.emb)
        self.metadata: dict = {
            'name': 'scripted_expert',
            'action_space': 'joint_position',
            'action_hz': float(self.emb.rates.control_hz),
            'chunk': chunk,
            'kind': 'a scripted expert, not a learned policy',
        }
        self._handoff: Handoff | None = None
        self._actuation: Actuation | None = None
        self._hold: np.ndarray | None = None
        self.info = ''
        self.reset()

    def reset(self) -> None:
        """Forget the run: the next observation starts the instruction's script afresh."""
        if self._handoff is not None:
            self._handoff.close()
        self._handoff = Handoff(self._script)
        self._actuation = None
        self._hold = None
        self.info = ''

    def infer(self, obs: dict) -> dict:
        """The next chunk of targets (H x 14), or done with a chunk holding the pose.
        ObservationError: `obs` is out of protocol; RuntimeError: the script failed."""
        first = self._hold is None
        check_observation(obs, first)
        if first:
            # Until the script commands anything, holding means the measured start pose.
            self._hold = start_command(obs)
        try:
            turn = self._handoff.turn(obs)
        except ObservationError:
            raise  # what the script read later was out of protocol: the caller's to hear
        except Exception as exc:
            raise RuntimeError(f'the scripted expert failed: {type(exc).__name__}: {exc}') from exc
        if not turn.done:
            self._hold = np.asarray(turn.rows[-1], dtype=float).copy()
            return reply(turn.rows)
        if self._actuation is not None:
            self._hold = self._actuation.command.copy()
        self.info = turn.info
        return reply(np.repeat(self._hold[None, :], self.chunk, axis=0), True, self.info)

    def close(self) -> None:
        """Stop the script of a connection that went away."""
        if self._handoff is not None:
            self._handoff.close()

    def _script(self, obs: dict, send: Callable[[np.ndarray], dict]) -> str:
        """The whole run, in the script's thread: read the instruction, look, act. What the
        expert cannot do ends the run with a sentence; anything else raises (infer re-raises)."""
        try:
            plan = parse(obs[PROMPT])  # infer checked that the first observation has one
        except InstructionError as exc:
            return str(exc)
        act = Actuation(self.emb, self.kinematics, send, obs, self.chunk)
        self._actuation = act
        locator = Locator(self.emb, self.urdf, self.kinematics)
        contact = ContactSkills(
            checked(act.execute),
            act.reachable,
            fail,
            act.state,
            lambda: locator.perception.table_top_z(self.emb.table_top_z),
            self.emb.gripper.closed_below,
        )
        try:
            return TaskScript(plan, act, contact, locator).run()
        except (ScriptError, LocateError) as exc:
            return f'I gave up: {exc}'
