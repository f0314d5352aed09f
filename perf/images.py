"""Milliseconds and bytes per PNG of the model's images: the harness's encoder
(`harness_perception.images.png`: unfiltered rows, zlib's default level) against Pillow's PNG
encoder at its default level with its per-row filter choice (what `png` used before) and at
level 1 (what the perception service's requests used before), side by side on the same
rendered views: each camera of the station after the reset of several tasks (layout
1, seed 7), the views an episode's first request and its turn reports send. The target: the
encoder takes at most half of Pillow's time, and its bytes are no more than Pillow's. Every
image is checked to decode to its pixels. Prints JSON.

    python perf/images.py [--repeats 5] [--save]
"""

import argparse
import io
import os
import statistics
import time

import numpy as np
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_perception.images import png
from harness_worker.worker import Worker
from PIL import Image

from arx_x5_description.urdf import station_urdf

TASKS = ('place_in_bowl', 'sort_by_colour', 'stack_blocks_three', 'open_drawer', 'insert_peg')


def pillow_png(rgb: np.ndarray, level: int = 6) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format='PNG', compress_level=level)
    return buffer.getvalue()


def pillow_fast_png(rgb: np.ndarray) -> bytes:
    return pillow_png(rgb, 1)


def best_of(encode, rgb: np.ndarray, repeats: int) -> tuple[float, bytes]:
    """The fastest of `repeats` encodings (ms) and the bytes."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        data = encode(rgb)
        times.append(time.perf_counter() - t)
    return min(times) * 1e3, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=5, help='encodings per image (the best)')
    add_save_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    emb = load_embodiment()
    worker = Worker(emb, station_urdf(config=emb.path))
    rows, token = [], ''
    try:
        for task in TASKS:
            token = worker.reset(task, 1, 7, token).token
            for camera in emb.cameras:
                rgb = np.ascontiguousarray(worker.station.render(camera, False, False).rgb)
                ms, data = best_of(png, rgb, args.repeats)
                pillow_ms, pillow_data = best_of(pillow_png, rgb, args.repeats)
                fast_ms, fast_data = best_of(pillow_fast_png, rgb, args.repeats)
                decoded = np.asarray(Image.open(io.BytesIO(data)))
                assert np.array_equal(decoded, rgb), f'{task} {camera}: decodes to other pixels'
                rows.append(
                    {
                        'task': task,
                        'camera': camera,
                        'pixels': f'{rgb.shape[1]}x{rgb.shape[0]}',
                        'ms': round(ms, 2),
                        'pillow_ms': round(pillow_ms, 2),
                        'bytes': len(data),
                        'pillow_bytes': len(pillow_data),
                        'pillow_level_1_ms': round(fast_ms, 2),
                        'pillow_level_1_bytes': len(fast_data),
                    }
                )
    finally:
        worker.close()
    time_ratio = sum(r['ms'] for r in rows) / sum(r['pillow_ms'] for r in rows)
    bytes_ratio = sum(r['bytes'] for r in rows) / sum(r['pillow_bytes'] for r in rows)
    fast_time = sum(r['ms'] for r in rows) / sum(r['pillow_level_1_ms'] for r in rows)
    fast_bytes = sum(r['bytes'] for r in rows) / sum(r['pillow_level_1_bytes'] for r in rows)
    by_camera = {
        camera: {
            'ms_median': round(statistics.median(r['ms'] for r in mine), 2),
            'pillow_ms_median': round(statistics.median(r['pillow_ms'] for r in mine), 2),
            'bytes_median': int(statistics.median(r['bytes'] for r in mine)),
            'pillow_bytes_median': int(statistics.median(r['pillow_bytes'] for r in mine)),
            'pillow_level_1_ms_median': round(
                statistics.median(r['pillow_level_1_ms'] for r in mine), 2
            ),
            'pillow_level_1_bytes_median': int(
                statistics.median(r['pillow_level_1_bytes'] for r in mine)
            ),
        }
        for camera in emb.cameras
        for mine in [[r for r in rows if r['camera'] == camera]]
    }
    report(
        {
            'bench': 'images',
            'repeats': args.repeats,
            'time_over_pillow': round(time_ratio, 3),
            'bytes_over_pillow': round(bytes_ratio, 3),
            'time_over_pillow_level_1': round(fast_time, 3),
            'bytes_over_pillow_level_1': round(fast_bytes, 3),
            'by_camera': by_camera,
            'images': rows,
        },
        [
            Target('PNG encoding time over Pillow, all views', round(time_ratio, 3), '<=', 0.5),
            Target('PNG bytes over Pillow, all views', round(bytes_ratio, 3), '<=', 1.0),
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
