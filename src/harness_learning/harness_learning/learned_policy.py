"""A trained checkpoint behind the policy protocol: `LearnedPolicy.infer(obs) -> reply`.

Runs in the learning extra's environment (torch, LeRobot). The policy sees what it was trained
on (its training record, harness_training.json): the joint state, the positions of the objects
the harness's pixel perception locates in the first observation (the queries the
demonstrations' programs located them with, looked up by the instruction) and, where it was
trained with them, the cameras' images at the training resolution. Each reply is the policy's
chunk of absolute joint targets, checked before it leaves: finite, 14 wide, bounded to the
command layout's range (joint limits, gripper fractions in [0, 1]; the shield judges the rest).
The policy never says done: a run ends when the task ends the episode, or by the harness's
stall rule.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
from harness_expert.locating import LocateError, Locator
from harness_policy.observation import (
    ACTION_SIZE,
    PROMPT,
    STATE,
    TIME,
    ObservationError,
    image_key,
    reply,
)
from harness_recording.trial_data import environment_state

from harness_learning.training import CHECKPOINT, RECORD, weights_sha256


def action_bounds(emb) -> tuple[np.ndarray, np.ndarray]:
    """The command layout's range: each arm's joint limits, then its gripper's [0, 1]."""
    low = np.array([*emb.lower, 0.0, *emb.lower, 0.0], dtype=np.float32)
    high = np.array([*emb.upper, 1.0, *emb.upper, 1.0], dtype=np.float32)
    return low, high


class CannotActError(RuntimeError):
    """The policy cannot act on this scene (it does not see what it learned to act on)."""


class CheckpointError(ValueError):
    """A folder is not a trained checkpoint this server can load; the message says why."""


def read_training(run: Path) -> tuple[dict, Path]:
    """The training record of a `harness policy train` folder and its checkpoint folder."""
    run = Path(run)
    try:
        record = json.loads((run / RECORD).read_text())
    except FileNotFoundError:
        raise CheckpointError(f'{run} is not a trained policy (no {RECORD})') from None
    except ValueError as exc:
        raise CheckpointError(f'{run / RECORD} is not JSON: {exc}') from None
    checkpoint = run / record.get('checkpoint', CHECKPOINT)
    if not (checkpoint / 'model.safetensors').is_file():
        raise CheckpointError(f'{run} has no trained weights ({checkpoint}/model.safetensors)')
    return record, checkpoint


class LearnedModel:
    """The checkpoint's LeRobot policy with its pre- and post-processors, loaded once per server
    (connections share it; each has its own LearnedPolicy)."""

    def __init__(self, run: Path) -> None:
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        self.record, self.checkpoint = read_training(run)
        try:
            config = PreTrainedConfig.from_pretrained(self.checkpoint)
        except Exception as exc:
            raise CheckpointError(
                f'{self.checkpoint}: not a LeRobot policy config: {exc}'
            ) from None
        config.device = 'cpu'
        shape = (config.output_features.get('action') or None) and config.output_features[
            'action'
        ].shape
        if tuple(shape or ()) != (ACTION_SIZE,):
            raise CheckpointError(
                f'{self.checkpoint}: its actions are {tuple(shape or ())} wide, the station takes '
                f'{ACTION_SIZE} (a checkpoint of another robot?)'
            )
        self.config = config
        try:
            policy = get_policy_class(config.type).from_pretrained(self.checkpoint, config=config)
            self.pre, self.post = make_pre_post_processors(
                config, pretrained_path=str(self.checkpoint)
            )
        except Exception as exc:  # weights cut short or of another shape, processors missing
            why = ' '.join(f'{type(exc).__name__}: {exc}'.split())[:300]
            raise CheckpointError(
                f'{self.checkpoint}: the checkpoint does not load: {why}'
            ) from None
        self.policy = policy
        self.policy.eval()
        self.torch = torch
        self.cameras = [
            k.removeprefix('observation.images.')
            for k in config.input_features
            if k.startswith('observation.images.')
        ]
        self.sha256 = weights_sha256(Path(run))
        self._history = threading.Lock()

    def chunk(
        self, features: dict[str, np.ndarray], prompt: str, history: dict | None = None
    ) -> tuple[np.ndarray, dict | None]:
        """The policy's next chunk of actions (H x 14) for one observation's features, and the
        observation history after it. `history`: the caller's run's, from its last chunk (None
        for a new run). A policy of observation history (diffusion) keeps it in its own
        queues, one object for every connection: each run's are put in and taken out under a
        lock (they were one history for all runs, and each new connection emptied it)."""
        torch = self.torch
        batch = {k: torch.from_numpy(np.array(v, np.float32))[None] for k, v in features.items()}
        batch['task'] = prompt
        steps = int(getattr(self.config, 'n_action_steps', 1) or 1)
        with torch.no_grad():
            batch = self.pre(batch)
            if hasattr(self.policy, '_queues'):
                # its own select_action keeps the queues and hands out the executed part of
                # what it generated, one at a time
                with self._history:
                    if history is None:
                        self.policy.reset()
                    else:
                        self.policy._queues = history
                    actions = torch.cat(
                        [self.post(self.policy.select_action(batch)) for _ in range(steps)]
                    )
                    history = self.policy._queues
            else:
                actions = self.post(self.policy.predict_action_chunk(batch))
        rows = actions.detach().cpu().numpy().reshape(-1, ACTION_SIZE)
        return rows[:steps], history


class LearnedPolicy:
    """One connection's policy: finds the object once, then answers every observation with the
    model's chunk."""

    def __init__(self, model: LearnedModel, locator: Locator) -> None:
        self.model = model
        self.locator = locator
        self.environment: list[np.ndarray] | None = None  # the located objects' positions
        self.started = 0.0  # the episode time of the run's first observation
        self.low, self.high = action_bounds(locator.emb)
        self.reset()

    def reset(self) -> None:
        self.environment = None
        self.history: dict | None = None  # the model's observation history of this run

    def _objects(self, obs: dict, prompt: str) -> list[np.ndarray]:
        """The environment state: each object the demonstrations' programs located for this
        instruction, located now in the same order (the width the model was trained with)."""
        tasks = self.model.record.get('tasks') or {}
        queries = tasks.get(prompt)
        if queries is None:
            learned = '; '.join(tasks) or 'none recorded'
            raise ObservationError(
                f'this policy did not learn the instruction {prompt!r}; it learned: {learned}'
            )
        positions = []
        for query in [queries] if isinstance(queries, str) else queries:
            try:
                found = self.locator.locate(obs, query)
            except LocateError as exc:
                raise ObservationError(str(exc)) from None
            if not found:
                raise CannotActError(f'the cameras show no {query}: nothing to act on')
            positions.append(np.asarray(found[0].position, np.float32))
        return positions

    def infer(self, obs: dict) -> dict:
        prompt = obs.get(PROMPT)
        if not isinstance(prompt, str) or not prompt:
            raise ObservationError(f'the observation has no instruction ({PROMPT})')
        state = np.asarray(obs.get(STATE), dtype=np.float32)
        if state.shape != (ACTION_SIZE,) or not np.isfinite(state).all():
            raise ObservationError(f'{STATE} must be {ACTION_SIZE} finite numbers')
        features = {'observation.state': state}
        if self.model.record.get('observation', {}).get('environment_state'):
            now = float(np.asarray(obs.get(TIME, 0.0)))
            if self.environment is None:
                try:
                    self.environment, self.started = self._objects(obs, prompt), now
                except CannotActError as exc:
                    # The policy's own failure, not its server's: it says so and is done,
                    # holding the measured pose (the run ends COMPLETED with the sentence).
                    return reply(np.clip(state, self.low, self.high)[None], True, str(exc))
            width = self.model.config.input_features['observation.environment_state'].shape[0]
            # the width it was trained with (an older checkpoint: the first object alone)
            state = environment_state(self.environment, now - self.started)
            features['observation.environment_state'] = (
                state if width == len(state) else state[:width]
            )
        for camera in self.model.cameras:
            features[f'observation.images.{camera}'] = self._image(obs, camera)
        rows, self.history = self.model.chunk(features, prompt, self.history)
        if rows.ndim != 2 or rows.shape[1] != ACTION_SIZE:
            raise RuntimeError(f'the model answered actions of shape {rows.shape}, not H x 14')
        if not np.isfinite(rows).all():
            raise RuntimeError('the model answered actions that are not finite (NaN weights?)')
        # The policy's action space is the command layout's range: each joint's limits and the
        # grippers' open fraction [0, 1]. A regression lands a little outside where the
        # demonstrations sat at a bound (an idle arm's joint at its lower limit 0 answered as
        # -0.008; "open" as 1.013): the output is bounded to that space, as a bounded output
        # head would be. Everything else (jumps, the workspace, collisions, contact force) is
        # the shield's to judge, on every action.
        return reply(np.clip(rows, self.low, self.high).astype(np.float32))

    def _image(self, obs: dict, camera: str) -> np.ndarray:
        """The camera's image at the training resolution, channels first, in [0, 1]."""
        from PIL import Image

        image = obs.get(image_key(camera))
        if not isinstance(image, np.ndarray) or image.ndim != 3:
            raise ObservationError(f'the policy sees {camera}; the observation lacks its image')
        _, h, w = self.model.config.input_features[f'observation.images.{camera}'].shape
        if image.shape[:2] != (h, w):
            image = np.asarray(Image.fromarray(image).resize((w, h), Image.Resampling.BOX))
        return np.transpose(image, (2, 0, 1)).astype(np.float32) / 255.0
