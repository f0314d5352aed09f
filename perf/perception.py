"""How well `locate` sees, against the simulator's truth. Prints JSON.

For every task and layout (objects at rest, arms at the start pose), each backend's
detections are matched to the task's objects: position error (median, max), recall, false
detections (detections that match no object), label accuracy for the words the task's reference
program asks with, and milliseconds per `locate`. Then the cases where a table assumption
fails: a cube held in a gripper 15 cm up (lift_cube, each layout: the arm grasps it and lifts)
and blocks stacked on each other (stack_blocks_two and stack_blocks_three, placed by hand in the
simulator), with the held cube's size against its true extent. Then `pixels` at rest under
each scene randomisation axis alone and under all of them (harness_bench.randomization; the
distractors count as objects). The tasks whose objects nest in others (NESTED) are measured
apart, outside the targets.

Perception sees only camera views (and, for `pixels`, the measured joint state); the truth is
read from the simulator by this script alone.

    python perf/perception.py [--backends pixels oracle] [--tasks lift_cube ...] [--axes all]
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_bench.randomization import AXES, axes_name, parse_axes
from harness_bench.reference import reference_path
from harness_bench.tasks import TASKS
from harness_bringup.processes import as_episode_process, use_wheels_ament_prefix
from harness_testing.staging import hold_object, stack_boxes, true_centre
from harness_types.transforms import quat_to_matrix
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf
from harness_perception import make_perception

CAMERAS = ['cam_head', 'cam_left_wrist', 'cam_right_wrist']
MATCH_M = 0.05  # a detection farther than this from every object matches none
# Tasks whose objects nest in others (a drawer in its cabinet, a cube in a closed drawer, a box
# under its lid): no camera sees them whole by design, and the centre of what is seen is not the
# centre of the whole. Measured and reported apart ('nested'), outside the targets.
NESTED = ('open_drawer', 'close_drawer', 'put_in_drawer', 'fetch_from_drawer', 'open_box_lid')
# Acceptance (issue #18) for `pixels`.
TARGETS = {'rest_median_mm': 5.0, 'rest_max_mm': 10.0, 'held_stacked_max_mm': 15.0}
TARGETS['held_size_max_mm'] = 10.0


def truth(worker: Worker) -> dict[str, tuple]:
    """Each object's label, true centre of its bounding box and its true axis-aligned extent."""
    out = {}
    for spec in worker.station.objects:
        _pos, quat = worker.station.object_pose(spec.name)
        if spec.shape == 'box':
            extent = 2 * np.abs(quat_to_matrix(quat)) @ np.array(spec.size)
        elif spec.shape == 'cylinder':
            extent = np.array([2 * spec.size[0], 2 * spec.size[0], 2 * spec.size[1]])
        else:  # bowl: radius, height
            extent = np.array([2 * spec.size[0], 2 * spec.size[0], spec.size[1]])
        out[spec.name] = (spec.label, true_centre(worker.station, spec), extent)
    return out


def query_words(task: str) -> list[str]:
    """The locate() queries of the task's reference program."""
    text = reference_path(task).read_text()
    return sorted(set(re.findall(r"locate\('([^']*)'\)", text)))


def match(found, objects: dict) -> tuple[dict, list]:
    """Each object's nearest detection (within MATCH_M), and the detections left over."""
    pairs = sorted(
        (float(np.linalg.norm(o.position - c)), name, i)
        for name, (_label, c, _e) in objects.items()
        for i, o in enumerate(found)
    )
    matched, used = {}, set()
    for gap, name, i in pairs:
        if gap <= MATCH_M and name not in matched and i not in used:
            matched[name], used = (found[i], gap), used | {i}
    return matched, [o for i, o in enumerate(found) if i not in used]


def locate(worker, perception, query=''):
    views = _views(worker, perception)
    t = time.perf_counter()
    found = perception.locate(views, worker.state(), query)
    return found, (time.perf_counter() - t) * 1e3


def at_rest(
    worker, emb, urdf, backend: str, tasks: list[str], axes: tuple[str, ...] = (), seed: int = 0
) -> dict:
    """Errors over every task's fixed layouts; with `axes`, each layout's scene randomised on
    them (layout k from seed `seed` + k)."""
    errors, ms, recall, false, labels = [], [], [0, 0], 0, [0, 0]
    per_task = {}
    for task in tasks:
        task_errors = []
        for layout in range(TASKS[task].layouts):
            worker.reset(task, layout, seed + layout if axes else 0, worker._token or '', axes)
            perception = make_perception(backend, emb, urdf)
            found, took = locate(worker, perception)
            ms.append(took)
            objects = truth(worker)
            matched, extra = match(found, objects)
            recall[0] += len(matched)
            recall[1] += len(objects)
            false += len(extra)
            task_errors += [gap for _o, gap in matched.values()]
            for query in query_words(task):  # does the query find what it names?
                wanted = {n for n, (label, _c, _e) in objects.items() if _names(label, query)}
                views = _views(worker, perception)
                got = {o.id for o in perception.locate(views, worker.state(), query)}
                hits = {n for n in wanted if n in matched and matched[n][0].id in got}
                labels[0] += len(hits) + (len(wanted) == 0 and len(got) == 0)
                labels[1] += max(len(wanted), 1)
        errors += task_errors
        per_task[task] = {
            'median_mm': round(float(np.median(task_errors)) * 1e3, 2) if task_errors else None,
            'max_mm': round(float(np.max(task_errors)) * 1e3, 2) if task_errors else None,
        }
    return {
        'position_median_mm': round(float(np.median(errors)) * 1e3, 2),
        'position_max_mm': round(float(np.max(errors)) * 1e3, 2),
        'recall': f'{recall[0]}/{recall[1]}',
        'false_detections': false,
        'label_accuracy': round(labels[0] / max(labels[1], 1), 3),
        'locate_ms_median': round(float(np.median(ms)), 1),
        'per_task': per_task,
    }


def _views(worker, perception):
    return worker.observe(CAMERAS, True, perception.needs_segmentation)


def _names(label: str, query: str) -> bool:
    """Whether the task's own label answers a query (the truth of label accuracy)."""
    words = set(label.split())
    synonyms = {'block': {'cube', 'block'}, 'cube': {'cube', 'block'}, 'bin': {'bin', 'bowl'}}
    return all(words & synonyms.get(w, {w}) for w in query.split())


def held_and_stacked(worker, emb, urdf, backend: str) -> dict:
    held, sizes, stacked, failed = [], [], [], []
    for layout in range(3):
        worker.reset('lift_cube', layout, 0, token=worker._token or '')
        if not hold_object(worker, 'cube', lift=0.15):
            failed.append(f'lift_cube layout {layout}: the scripted grasp did not hold the cube')
            continue
        perception = make_perception(backend, emb, urdf)
        found, _ = locate(worker, perception)
        matched, _ = match(found, truth(worker))
        if 'cube' not in matched:
            failed.append(f'lift_cube layout {layout}: the held cube was not found')
            continue
        obj, gap = matched['cube']
        held.append(gap)
        sizes.append(float(np.max(np.abs(obj.size - truth(worker)['cube'][2]))))
    for task in ('stack_blocks_two', 'stack_blocks_three'):
        for layout in range(3):
            worker.reset(task, layout, 0, token=worker._token or '')
            stack_boxes(worker)
            perception = make_perception(backend, emb, urdf)
            found, _ = locate(worker, perception)
            objects = truth(worker)
            matched, _ = match(found, objects)
            for name in objects:
                if name in matched:
                    stacked.append(matched[name][1])
                else:
                    failed.append(f'{task} layout {layout}: {name} was not found')

    def mm(values, f):
        return round(float(f(values)) * 1e3, 2) if values else None

    return {
        'held_position_max_mm': mm(held, np.max),
        'held_size_error_max_mm': mm(sizes, np.max),
        'stacked_position_median_mm': mm(stacked, np.median),
        'stacked_position_max_mm': mm(stacked, np.max),
        'not_found': failed,
    }


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backends', nargs='+', default=['pixels', 'oracle'])
    parser.add_argument('--tasks', nargs='+', default=sorted(TASKS))
    parser.add_argument(
        '--axes',
        default=','.join(AXES),
        help='randomisation axes to measure pixels at rest under, one at a time, plus all of '
        'them together (comma-separated; default every axis; none: skip)',
    )
    parser.add_argument(
        '--seed', type=int, default=5100, help='the first seed of the randomised scenes'
    )
    add_save_argument(parser)
    args = parser.parse_args()
    as_episode_process()  # perception as the kernel runs it: one BLAS thread, arrays in the heap
    emb = load_embodiment()
    urdf = station_urdf()
    worker = Worker(emb, urdf)
    whole = [t for t in args.tasks if t not in NESTED]
    nested = [t for t in args.tasks if t in NESTED]
    out = {'bench': 'perception', 'nested_tasks_apart': nested}
    targets = []
    for backend in args.backends:
        out[backend] = {
            'at_rest': at_rest(worker, emb, urdf, backend, whole),
            'nested': at_rest(worker, emb, urdf, backend, nested) if nested else None,
            'held_and_stacked': held_and_stacked(worker, emb, urdf, backend),
        }
    if 'pixels' in out:
        r, h = out['pixels']['at_rest'], out['pixels']['held_and_stacked']
        found, total = (int(v) for v in r['recall'].split('/'))
        targets = [
            Target('pixels at rest: position error, median', r['position_median_mm'], '<=',
                   TARGETS['rest_median_mm'], 'mm'),
            Target('pixels at rest: position error, worst', r['position_max_mm'], '<=',
                   TARGETS['rest_max_mm'], 'mm'),
            Target('pixels at rest: objects missed', total - found, '==', 0),
            Target('pixels, held or stacked: position error, worst',
                   max(h['held_position_max_mm'] or 1e9, h['stacked_position_max_mm'] or 1e9),
                   '<=', TARGETS['held_stacked_max_mm'], 'mm'),
            Target('pixels, held: size error, worst', h['held_size_error_max_mm'] or 1e9, '<=',
                   TARGETS['held_size_max_mm'], 'mm'),
        ]  # fmt: skip
    axes = parse_axes(args.axes)
    if axes:  # locate under each randomisation axis alone, then under all of them at once
        out['per_axis'] = {}
        for group in [(a,) for a in axes] + ([axes] if len(axes) > 1 else []):
            name = axes_name(group)
            r = at_rest(worker, emb, urdf, 'pixels', whole, group, args.seed)
            out['per_axis'][name] = {k: v for k, v in r.items() if k != 'per_task'}
            out['per_axis'][name]['worst_tasks'] = sorted(
                ((t, v['median_mm']) for t, v in r['per_task'].items() if v['median_mm']),
                key=lambda tv: -tv[1],
            )[:3]
            targets.append(
                Target(f'pixels at rest under {name}: position error, median',
                       r['position_median_mm'], '<=', TARGETS['rest_median_mm'], 'mm')
            )  # fmt: skip
    worker.close()
    report(out, targets, args.save)


if __name__ == '__main__':
    main()
