"""The `service` backend over real HTTP: a small detector of our own that answers from the
simulator's segmentation (as an external open-vocabulary model would from the colour images),
and the ways a detector fails."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_perception.backends.service import (
    PROTOCOL,
    ServiceError,
    ServicePerception,
    image_of,
    png_base64,
)
from harness_testing.staging import true_centre
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf
from harness_perception import Perception

CAMERAS = ['cam_head', 'cam_left_wrist', 'cam_right_wrist']


class OracleDetector(BaseHTTPRequestHandler):
    """POST /detect: a mask per object per camera, from the simulator's segmentation. The
    server's `answer` may replace the reply (to play a failing detector)."""

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        server.requests.append(body)
        if server.answer is not None:
            status, payload = server.answer
        else:
            status, payload = 200, {'detections': self.detections(body)}
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        promised = len(data) + (100 if server.cut else 0)  # cut: the answer breaks off
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(promised))
        self.end_headers()
        self.wfile.write(data)

    def detections(self, body):
        out = []
        for camera in body['cameras']:
            image = image_of(camera['rgb_png'])
            assert image.shape == (camera['height'], camera['width'], 3)
            view = self.server.worker.observe([camera['name']], False, True)[0]
            for instance, label in enumerate(view.labels):
                mask = view.segmentation == instance
                if mask.sum() == 0:
                    continue
                entry = {
                    'camera': camera['name'],
                    'label': label,
                    'score': 0.99,
                    'mask_png': png_base64((mask * 255).astype(np.uint8)),
                }
                if self.server.with_instances:
                    entry['instance'] = instance
                out.append(entry)
        return out


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


@pytest.fixture
def detector(worker):
    server = ThreadingHTTPServer(('127.0.0.1', 0), OracleDetector)
    server.worker, server.requests, server.answer, server.with_instances = worker, [], None, True
    server.cut = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def service(detector, timeout=5.0):
    url = f'http://127.0.0.1:{detector.server_address[1]}'
    return Perception(ServicePerception(url, 0.765, timeout))


def locate(worker, perception, query=''):
    views = worker.observe(CAMERAS, True, False)
    return perception.locate(views, worker.state(), query)


@pytest.mark.parametrize('with_instances', [True, False])
def test_the_service_finds_every_object_with_its_labels(worker, detector, with_instances):
    detector.with_instances = with_instances
    worker.reset('sort_by_colour', 0, 0, token=worker._token or '')
    found = locate(worker, service(detector))
    assert sorted(o.label for o in found) == sorted(s.label for s in worker.station.objects)
    for spec in worker.station.objects:
        centre = true_centre(worker.station, spec)
        obj = min(found, key=lambda o: np.linalg.norm(o.position - centre))
        assert obj.label == spec.label
        assert np.linalg.norm(obj.position - centre) < 0.01
    request = detector.requests[-1]
    assert request['protocol'] == PROTOCOL and request['query'] == ''
    assert [c['name'] for c in request['cameras']] == CAMERAS
    assert 'depth' not in json.dumps(request)  # colour and calibration only
    red = locate(worker, service(detector), 'red block')
    assert len(red) == 2 and detector.requests[-1]['query'] == 'red block'


def test_a_failing_service_is_a_clear_error(worker, detector):
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    detector.answer = (500, {'error': 'model not loaded'})
    with pytest.raises(ServiceError, match='HTTP 500'):
        locate(worker, service(detector))
    detector.answer = (200, b'not json')
    with pytest.raises(ServiceError, match='no JSON'):
        locate(worker, service(detector))
    detector.answer = (200, {'boxes': []})
    with pytest.raises(ServiceError, match='no detections list'):
        locate(worker, service(detector))
    detector.answer = (200, {'detections': [{'camera': 'cam_head', 'label': 'x'}]})
    with pytest.raises(ServiceError, match='detection 0 is malformed'):
        locate(worker, service(detector))
    small = png_base64(np.ones((4, 4), np.uint8))
    detector.answer = (
        200,
        {'detections': [{'camera': 'cam_head', 'label': 'x', 'mask_png': small}]},
    )
    with pytest.raises(ServiceError, match='mask'):
        locate(worker, service(detector))
    detector.answer, detector.cut = (200, {'detections': []}), True
    with pytest.raises(ServiceError, match='broke off'):
        locate(worker, service(detector))
    detector.cut = False
    assert locate(worker, service(detector)) == []


def test_an_unreachable_service_is_a_clear_error(worker):
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    gone = ThreadingHTTPServer(('127.0.0.1', 0), OracleDetector)
    port = gone.server_address[1]
    gone.server_close()
    perception = Perception(ServicePerception(f'http://127.0.0.1:{port}', 0.765, 2.0))
    with pytest.raises(ServiceError, match='unreachable'):
        locate(worker, perception)
    with pytest.raises(ValueError, match='http'):
        ServicePerception('127.0.0.1:9', 0.765)
