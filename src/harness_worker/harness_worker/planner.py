"""Collision-free joint paths for one arm: a straight line when it is free, else RRT-Connect.

The collision check is injected (`collides(q) -> bool`), so this module knows no simulator.
Randomness comes from a seeded generator: the same request gives the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlanResult:
    ok: bool
    path: list[np.ndarray]  # joint waypoints from start to goal (inclusive) when ok
    reason: str = ''


def _segment_free(
    a: np.ndarray, b: np.ndarray, collides: Callable[[np.ndarray], bool], resolution: float
) -> bool:
    n = max(1, int(np.ceil(np.abs(b - a).max() / resolution)))
    return not any(collides(a + (b - a) * (k / n)) for k in range(1, n + 1))


def plan_path(
    start: np.ndarray,
    goal: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    collides: Callable[[np.ndarray], bool],
    seed: int = 0,
    resolution: float = 0.05,
    max_nodes: int = 2000,
    step: float = 0.3,
) -> PlanResult:
    """A joint path from `start` to `goal` whose every `resolution`-rad sample is collision-free."""
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    if np.any(goal < lower - 1e-9) or np.any(goal > upper + 1e-9):
        return PlanResult(False, [], 'the goal is outside the joint limits')
    if collides(goal):
        return PlanResult(False, [], 'the goal configuration is in collision')
    if _segment_free(start, goal, collides, resolution):
        return PlanResult(True, [start, goal])
    rng = np.random.default_rng(seed)
    trees = ([start], [-1]), ([goal], [-1])

    def extend(tree, target):
        nodes, parents = tree
        near = min(range(len(nodes)), key=lambda i: np.linalg.norm(nodes[i] - target))
        delta = target - nodes[near]
        dist = np.linalg.norm(delta)
        new = target if dist <= step else nodes[near] + delta * (step / dist)
        if not _segment_free(nodes[near], new, collides, resolution):
            return None
        nodes.append(new)
        parents.append(near)
        return len(nodes) - 1

    def branch(tree, index):
        nodes, parents = tree
        out = []
        while index != -1:
            out.append(nodes[index])
            index = parents[index]
        return out

    a, b = trees
    for _ in range(max_nodes):
        sample = rng.uniform(lower, upper)
        i = extend(a, sample)
        if i is not None:
            # Greedily connect the other tree to the new node.
            while True:
                j = extend(b, a[0][i])
                if j is None:
                    break
                if np.allclose(b[0][j], a[0][i]):
                    first, second = (a, b) if a is trees[0] else (b, a)
                    ia, ib = (i, j) if a is trees[0] else (j, i)
                    path = branch(first, ia)[::-1] + branch(second, ib)[1:]
                    return PlanResult(True, _shortcut(path, collides, resolution))
        a, b = b, a
        if len(a[0]) + len(b[0]) > max_nodes:
            break
    return PlanResult(False, [], f'no collision-free path found within {max_nodes} nodes')


def _shortcut(
    path: list[np.ndarray], collides: Callable[[np.ndarray], bool], resolution: float
) -> list[np.ndarray]:
    out = [path[0]]
    i = 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not _segment_free(path[i], path[j], collides, resolution):
            j -= 1
        out.append(path[j])
        i = j
    return out
