"""The world model's half of the kernel: `predict_future` (what would happen, without moving
anything) and shadow mode (each policy run predicted before it runs and the prediction logged
beside what happened). Predicted views are read by the episode's own perception, with the
ids locate() gives, without moving its tracks."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import numpy as np
from harness_types.execution import Execution
from harness_types.prediction import MAX_HORIZON_S, Prediction
from harness_types.robot_state import RobotState
from harness_types.scene import LocatedObject

from harness_kernel.learned import MAX_INSTRUCTION, PREDICTED_VIEWS, SHADOW_HORIZON_S, LearnedHalf
from harness_perception import Perception


class Foresight:
    """`robot` is the kernel's RobotPort (predict, views, state); `shadow` turns shadow mode
    on; `control_hz` bounds the rows of given actions (None: every row is sent)."""

    def __init__(
        self,
        robot,
        perception: Perception,
        learned: LearnedHalf,
        log: Callable[[dict], None],
        shadow: bool = False,
        control_hz: float | None = None,
    ) -> None:
        self.robot = robot
        self.perception = perception
        self.learned = learned
        self.log = log
        self.shadow = shadow
        self.control_hz = control_hz

    def predict_future(
        self, policy: str = '', actions=None, seconds: float = 2.0, instruction: str = ''
    ) -> dict:
        seconds = float(seconds)
        if policy and actions is not None:
            raise ValueError('predict_future() takes a policy or actions, not both')
        if not (np.isfinite(seconds) and 0 < seconds <= MAX_HORIZON_S):
            raise ValueError(f'seconds must be in (0, {MAX_HORIZON_S:g}], got {seconds}')
        if policy:
            entry = self.learned.entry(str(policy))
            instruction = str(instruction)[:MAX_INSTRUCTION]
            prediction = self.robot.predict(
                seconds, entry=entry, instruction=instruction, cameras=PREDICTED_VIEWS
            )
        elif actions is not None:
            array = np.asarray(actions, dtype=float)
            if array.ndim != 2 or array.shape[1] != 14 or not np.all(np.isfinite(array)):
                shaped = array.ndim == 2 and array.shape[1] == 14
                got = 'a value that is not finite' if shaped else array.shape
                raise ValueError(f'actions must be N x 14 finite numbers, got {got}')
            if self.control_hz:  # no more rows than the horizon has ticks: the rest never run
                array = array[: int(np.ceil(seconds * self.control_hz))]
            prediction = self.robot.predict(seconds, actions=array, cameras=PREDICTED_VIEWS)
        else:
            raise ValueError('predict_future() needs a policy name or actions')
        return self._predicted(prediction)

    def shadow_predict(self, args: dict) -> tuple | None:
        """Shadow mode: the world model's prediction of a policy run, before it runs (None
        when off or when no prediction could be made; never raises)."""
        if not self.shadow:
            return None
        try:
            before = self._locate_quietly()
            horizon = min(SHADOW_HORIZON_S, float(args.get('max_seconds') or SHADOW_HORIZON_S))
            prediction = self.robot.predict(
                horizon,
                entry=args['entry'],
                instruction=args['instruction'],
                cameras=PREDICTED_VIEWS,
            )
            return before, self._predicted(prediction), horizon
        except Exception as exc:  # shadow mode never stops a run
            self.log({'call': '(kernel)', 'shadow_prediction': None, 'why': str(exc)[:500]})
            return None

    def shadow_score(self, shadow: tuple, e: Execution) -> None:
        """Log the prediction beside what happened: each object's predicted and measured
        displacement and the distance between the predicted and measured positions."""
        before, predicted, horizon = shadow
        try:
            after = {o.id: o for o in self._locate_quietly()}
            guess = {o.id: o for o in predicted['objects']}
            scored = []
            for o in before:
                if o.id in after and o.id in guess:
                    p, m = guess[o.id].position, after[o.id].position
                    scored.append(
                        {
                            'id': o.id,
                            'predicted_displacement_m': _rounded(p - o.position),
                            'measured_displacement_m': _rounded(m - o.position),
                            'error_m': round(float(np.linalg.norm(p - m)), 4),
                        }
                    )
            errors = [s['error_m'] for s in scored]
            self.log(
                {
                    'call': '(kernel)',
                    'shadow_prediction': {
                        'model': predicted['model'],
                        'horizon_s': horizon,
                        'predicted_ticks': len(predicted['times']),
                        'run_ticks': len(e.trace),
                        'run_event': e.event,
                        'stopped': predicted['stopped'],
                        'located': {
                            'before': len(before),
                            'predicted': len(guess),
                            'after': len(after),
                        },
                        'objects': scored,
                        'mean_error_m': round(float(np.mean(errors)), 4) if errors else None,
                    },
                }
            )
        except Exception as exc:  # shadow mode never stops a run
            self.log({'call': '(kernel)', 'shadow_score': None, 'why': str(exc)[:500]})

    def _locate_quietly(self) -> list[LocatedObject]:
        """Every object now, with locate()'s ids but without moving its tracks (shadow mode
        must not change what the program's locate() answers)."""
        views = self.robot.views([], segmentation=self.perception.needs_segmentation)
        detections = self.perception.detect(views, self.robot.state(), '')
        ids = copy.deepcopy(self.perception.tracker).assign(detections)
        return [
            LocatedObject(
                i, d.name, d.measured.position, d.measured.size, d.measured.top, d.cameras
            )
            for i, d in zip(ids, detections, strict=True)
        ]

    def _predicted(self, prediction: Prediction) -> dict:
        """A prediction as the program gets it: the objects located in the predicted views
        (the ids of objects located before are kept; the tracker is not changed)."""
        objects: list[LocatedObject] = []
        if prediction.views and len(prediction.states):
            end = _state_at(self.robot.state(), prediction.states[-1])
            detections = self.perception.detect(prediction.views, end, '')
            # ids as locate() would give them, from a copy: a prediction changes no track
            ids = copy.deepcopy(self.perception.tracker).assign(detections)
            objects = [
                LocatedObject(
                    i, d.name, d.measured.position, d.measured.size, d.measured.top, d.cameras
                )
                for i, d in zip(ids, detections, strict=True)
            ]
        return {
            'model': prediction.model,
            'images': {v.name: v.rgb for v in prediction.views if v.rgb is not None},
            'times': prediction.times,
            'states': prediction.states,
            'objects': objects,
            'stopped': prediction.stopped,
        }


def _rounded(v: np.ndarray) -> list[float]:
    return [round(float(x), 4) for x in v]


def _state_at(now: RobotState, measured: np.ndarray) -> RobotState:
    """`now` with the joints and grippers of a predicted measured vector (what perception
    needs to find the robot's own links in predicted views)."""
    arms = {
        arm: dataclasses.replace(
            now.arm(arm),
            joints=np.asarray(measured[base : base + 6], dtype=float),
            gripper=float(measured[base + 6]),
        )
        for arm, base in (('left', 0), ('right', 7))
    }
    return dataclasses.replace(now, left=arms['left'], right=arms['right'])
