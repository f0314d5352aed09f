"""A world model's prediction (predict_future): the robot's predicted states and the views of
the predicted end state."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness_types.camera import CameraView

# The longest prediction (simulated seconds) predict_future asks of a world model: the kernel
# refuses a longer one, the stand-in never rolls further.
MAX_HORIZON_S = 60.0


@dataclass(frozen=True)
class Prediction:
    """`model` says what predicted (a stand-in says it is one); `times` (N,) s of episode
    time; `states` (N, 14) predicted measured vectors in the command layout; `views` the
    predicted end state's camera views; `stopped` why the prediction ended before its horizon
    ('' when it did not)."""

    model: str
    times: np.ndarray
    states: np.ndarray
    views: list[CameraView] = field(default_factory=list)
    stopped: str = ''
