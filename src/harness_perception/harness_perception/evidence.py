"""The verifier's own eyes: fresh camera views of every camera, located by a perception of the
verifier's own (not the program's: its tracks and ids stay the program's), and the robot state,
made into `harness_bench.verifier.Evidence`. Pure: the station comes in as the episode's
`EpisodeStation`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from arx_x5_description.embodiment import Embodiment
from harness_bench.verifier import (
    Claim,
    Evidence,
    Judgement,
    combine,
    judge_tier,
)
from harness_types.scene import LocatedObject

from harness_perception import Perception, make_perception
from harness_perception.query import Query


def finder(objects: list[LocatedObject], words: dict[str, set[str]]) -> Callable:
    """find(query): the objects whose colour and shape words carry every word of `query`."""

    def find(query: str) -> list[LocatedObject]:
        exact = [o for o in objects if o.id == query]  # an id from observe names one object
        if exact:
            return exact
        q = Query.parse(query)
        return q.select([o for o in objects if q.matches(words[o.id])])

    return find


class EvidenceTaker:
    """`take(last_motion_step, before)` measures the station now. `station` has robot() and
    cameras(names, depth, segmentation); `backend` is a perception backend name
    (kernel.perception); `perception`: make_perception's other arguments. With
    `shared_passes`, a pass another perception of the station (a kernel's, or an earlier
    episode's verifier's) ran on byte-identical views and joints is taken instead of run again:
    the detections its own pass would give. Those perceptions are the station's trusted code;
    the program process cannot reach the folder (shared_passes.py). Tracks and ids stay the
    verifier's."""

    def __init__(self, station, emb: Embodiment, backend: str = 'pixels', **perception) -> None:
        self.station = station
        self.emb = emb
        self.perception: Perception = make_perception(backend, emb, **perception)
        self.home_tcp: dict[str, np.ndarray] = {}

    def mark_home(self) -> None:
        """Remember each arm's TCP now (after a reset) as its home for AtHome claims."""
        robot = self.station.robot()
        self.home_tcp = {n: a.tcp_position.copy() for n, a in robot.arms.items()}

    def take(self, last_motion_step: int = 0, before: Evidence | None = None) -> Evidence:
        robot = self.station.robot()
        views = self.station.cameras(
            list(self.emb.cameras), depth=True, segmentation=self.perception.needs_segmentation
        )
        detections = self.perception.detect(views, robot, '')
        ids = self.perception.tracker.assign(detections)
        objects = [
            LocatedObject(
                i, d.name, d.measured.position, d.measured.size, d.measured.top, d.cameras
            )
            for i, d in zip(ids, detections, strict=True)
        ]
        words = {o.id: d.words for o, d in zip(objects, detections, strict=True)}
        return Evidence(
            robot,
            objects,
            finder(objects, words),
            observed_step=robot.step,  # the views are of this tick
            last_motion_step=last_motion_step,
            # as measured: a scene variation may have moved the table
            table_top_z=self.perception.table_top_z(self.emb.table_top_z),
            before=before,
            home_tcp=self.home_tcp,
        )


def goal_verifier(
    taker: EvidenceTaker, goal: Callable[[], tuple], tier3: bool = False
) -> Callable[..., dict]:
    """verify(extra=()): the task's goal (the claims `goal()` gives now: a task's goal may
    follow its instruction) judged now, as a dict: the combined verdict, its tier and evidence,
    and each tier's own verdict (None where it cannot tell) for the report card. `extra`:
    judgements of other tiers (a VLM's, tier 3: counted only where `tier3`, the task's tier 3
    having a report card; its own verdict is in `tiers` either way)."""

    def verify_goal(extra: tuple[Judgement, ...] = ()) -> dict:
        claims = goal()
        evidence = taker.take()
        per_tier = {t: judge_tier(claims, t, evidence) for t in (1, 2)}
        per_tier |= {j.tier: j for j in extra}
        verdict = combine([j for j in per_tier.values() if j is not None], tier3=tier3)
        return verdict.as_dict() | {
            'tiers': {str(t): (j.verdict if j else None) for t, j in per_tier.items()},
            'at_rest': evidence.at_rest,
            'seen': [
                {'id': o.id, 'label': o.label, 'position': np.round(o.position, 3).tolist()}
                for o in evidence.objects
            ],
        }

    return verify_goal


__all__ = ['Claim', 'EvidenceTaker', 'Judgement', 'finder']


def evidence_json(e: Evidence) -> dict:
    """What evidence shows, as JSON (the operator's observe): the step, each arm's TCP, gripper
    opening, finger force and joints, every object found (id, label, position, size, top),
    and whether the arms were at rest."""
    return {
        'step': e.observed_step,
        'robot': {
            name: {
                'tcp': np.round(a.tcp_position, 4).tolist(),
                'gripper_open': round(float(a.gripper), 3),
                'grip_force_n': round(float(a.grip_force), 2),
                'joints': np.round(a.joints, 4).tolist(),
            }
            for name, a in e.robot.arms.items()
        },
        'objects': [
            {
                'id': o.id,
                'label': o.label,
                'position': np.round(o.position, 4).tolist(),
                'size': np.round(o.size, 4).tolist(),
                'top': round(float(o.top), 4),
            }
            for o in e.objects
        ],
        'at_rest': e.at_rest,
    }
