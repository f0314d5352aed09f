"""A demonstration as the collector writes it, for the tests of training and serving."""

import numpy as np
from harness_recording.trial_data import TrialData, environment_state

FPS = 25


def demo(n: int, k: int, environment: bool = True, query: str = 'red cube') -> TrialData:
    t = np.arange(n) / FPS
    state = np.cumsum(np.full((n, 14), 0.01, np.float32), axis=0) + k
    return TrialData(
        task='Pick up the red cube.',
        state=state,
        action=state + 0.01,
        time=t,
        images={
            'cam_head': [(s, np.full((24, 32, 3), 10 * i % 255, np.uint8)) for i, s in enumerate(t)]
        },
        meta={'run': f'r{k}', 'trial_id': 'episode', 'verdict': 'satisfied', 'tier': 1}
        | {'located_queries': [query]},
        environment=environment_state([np.array([0.1 * k, -0.2, 0.78], np.float32)])
        if environment
        else None,
    )
