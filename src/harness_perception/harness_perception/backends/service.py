"""The `service` backend: an external detector (e.g. an open-vocabulary model on a GPU machine)
finds objects in the colour images; the harness lifts its masks to 3-D with the depth images
and measures them like every backend. The protocol (docs/PERCEPTION_SERVICE.md):

POST <url>/detect, JSON body
  {"protocol": "harness.detect/1", "query": "...",
   "cameras": [{"name", "width", "height", "fx", "fy", "cx", "cy",
                "position": [x, y, z], "rotation": 3x3 (the optical frame in the world),
                "rgb_png": base64 PNG}]}
200, JSON body
  {"detections": [{"camera": name, "label": "red cube", "score": 0..1,
                   "mask_png": base64 PNG (H x W, nonzero = the object),
                   "instance": optional, the same value for one object in several cameras}]}
Detections of one label without an instance are merged across cameras by 3-D proximity.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import urllib.error
import urllib.request

import numpy as np
from harness_types.camera import CameraView
from harness_types.robot_state import RobotState
from PIL import Image

from harness_perception.clusters import components
from harness_perception.colour import colour_of
from harness_perception.images import png
from harness_perception.measure import measure_all
from harness_perception.seam import Detection

PROTOCOL = 'harness.detect/1'
MIN_POINTS = 12
MERGE_VOXEL_M = 0.01  # detections of one label whose points come this close are one object


class ServiceError(RuntimeError):
    """The detector could not be reached or answered something that breaks the protocol."""


def png_base64(image: np.ndarray) -> str:
    return base64.b64encode(png(image)).decode('ascii')


def image_of(text: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(text, validate=True))))


def request_body(views: list[CameraView], query: str) -> dict:
    """The JSON request for these views (colour images and calibration only)."""
    return {
        'protocol': PROTOCOL,
        'query': query,
        'cameras': [
            {
                'name': v.name,
                'width': v.shape[1],
                'height': v.shape[0],
                'fx': v.fx,
                'fy': v.fy,
                'cx': v.cx,
                'cy': v.cy,
                'position': np.asarray(v.position, float).tolist(),
                'rotation': np.asarray(v.rotation, float).tolist(),
                'rgb_png': png_base64(v.rgb),
            }
            for v in views
            if v.rgb is not None
        ],
    }


class ServicePerception:
    name = 'service'
    needs_segmentation = False
    reads_query = True

    def __init__(self, url: str, table_top_z: float, timeout_s: float = 10.0) -> None:
        if not url.startswith(('http://', 'https://')):
            raise ValueError(
                f'kernel.perception_service_url must be an http(s):// address, not {url!r}'
            )
        self.url = url.rstrip('/') + '/detect'
        self.table_top_z = table_top_z
        self.timeout_s = timeout_s

    def _ask(self, views: list[CameraView], query: str) -> list[dict]:
        data = json.dumps(request_body(views, query)).encode()
        request = urllib.request.Request(
            self.url, data=data, headers={'Content-Type': 'application/json'}, method='POST'
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ServiceError(f'perception service {self.url} answered HTTP {exc.code}') from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, 'reason', exc)
            raise ServiceError(f'perception service {self.url} unreachable: {reason}') from None
        except http.client.HTTPException as exc:  # a cut or garbled answer
            problem = f'{type(exc).__name__}: {exc}'
            raise ServiceError(f'perception service {self.url} broke off: {problem}') from None
        except json.JSONDecodeError as exc:
            raise ServiceError(f'perception service {self.url} sent no JSON: {exc}') from None
        detections = answer.get('detections') if isinstance(answer, dict) else None
        if not isinstance(detections, list):
            raise ServiceError(f'perception service {self.url}: the answer has no detections list')
        return detections

    def detect(
        self, views: list[CameraView], state: RobotState | None, query: str = ''
    ) -> list[Detection]:
        by_name = {v.name: v for v in views}
        groups: dict[tuple, dict] = {}
        for n, d in enumerate(self._ask(views, query)):
            try:
                view = by_name[d['camera']]
                label = str(d['label'])
                mask = image_of(d['mask_png'])
            except (KeyError, TypeError, ValueError, OSError) as exc:
                raise ServiceError(
                    f'perception service: detection {n} is malformed ({exc})'
                ) from None
            if mask.ndim == 3:
                mask = mask[..., 0]
            if mask.shape != view.shape:
                raise ServiceError(
                    f'perception service: detection {n} has a {mask.shape} mask for the '
                    f'{view.shape} image of {view.name}'
                )
            if view.depth is None:
                continue
            points, rgb = view.lift(mask != 0)
            if len(points) < MIN_POINTS:
                continue
            key = (label, str(d['instance'])) if d.get('instance') is not None else (label, None)
            g = groups.setdefault(key, {'p': [], 'c': [], 'cams': []})
            g['p'].append(points)
            g['c'].append(rgb)
            g['cams'].append(np.full(len(points), list(by_name).index(view.name)))
        names = list(by_name)
        objects = []  # (label, points, colours, cameras)
        for (label, instance), g in sorted(groups.items(), key=lambda kv: str(kv[0])):
            p, c, cam = np.concatenate(g['p']), np.concatenate(g['c']), np.concatenate(g['cams'])
            parts = components(p, MERGE_VOXEL_M) if instance is None else np.zeros(len(p), int)
            for k in range(int(parts.max()) + 1):
                sel = parts == k
                if sel.sum() >= MIN_POINTS:
                    objects.append((label, p[sel], c[sel], {names[i] for i in np.unique(cam[sel])}))
        measured = measure_all([o[1] for o in objects], self.table_top_z)
        return [
            Detection(colour_of(c), m, sorted(cams), label=label)
            for (label, _p, c, cams), m in zip(objects, measured, strict=True)
        ]


def make_backend(emb, urdf: str | None, url: str, timeout_s: float) -> ServicePerception:
    """The service backend (a perception plugin): the detector at `url`."""
    return ServicePerception(url, emb.table_top_z, timeout_s)
