"""The real openpi client (openpi-client 0.1.2, `WebsocketClientPolicy`) against our
PolicyServer: metadata, chunks derived from what it sent, and our error as its RuntimeError.

openpi-client pins numpy<2, so it runs in a venv of its own, made once per version of
openpi_client_requirements.txt in the user's cache folder
($XDG_CACHE_HOME or ~/.cache, /harness/openpi-client-<hash>) and reused after that. The test
skips only when pip cannot reach a package index; any other failure fails it.
"""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from harness_policy.server import PolicyServer

REQUIREMENTS = Path(__file__).with_name('openpi_client_requirements.txt')
# What pip prints when no index answers (as opposed to a pin it cannot find).
UNREACHABLE = (
    'NewConnectionError',
    'Failed to establish a new connection',
    'Temporary failure in name resolution',
    'Network is unreachable',
    'ConnectTimeoutError',
    'ProxyError',
    'Max retries exceeded',
    'Could not fetch URL',
)
METADATA = {'policy': 'echo', 'action_horizon': 10, 'action_dim': 14, 'cameras': ['cam_head']}
HORIZON = 10

# Runs in the openpi venv: argv host port; prints one JSON object.
CLIENT_SCRIPT = r"""
import json, sys
import numpy as np
from openpi_client import websocket_client_policy

host, port = sys.argv[1], int(sys.argv[2])
image = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
state = np.arange(14, dtype=np.float32) / 10
out = {'numpy': np.__version__, 'image_sum': int(image.sum(dtype=np.int64)), 'replies': []}
policy = websocket_client_policy.WebsocketClientPolicy(host, port)
out['metadata'] = policy.get_server_metadata()
for _ in range(2):
    reply = policy.infer(
        {'observation/images/cam_head': image, 'observation/state': state, 'prompt': 'stack'}
    )
    actions = reply['actions']
    out['replies'].append({
        'actions': actions.tolist(),
        'dtype': str(actions.dtype),
        'image_sum': int(reply['image_sum']),
        'image_sum_type': type(reply['image_sum']).__name__,
        'image_shape': list(reply['image_shape']),
        'image_dtype': reply['image_dtype'],
        'prompt': reply['prompt'],
    })
try:
    websocket_client_policy.WebsocketClientPolicy(host, port).infer({'fail': np.float32(1)})
    out['error'] = None
except RuntimeError as exc:
    out['error'] = str(exc)
print(json.dumps(out))
"""


class Echo:
    """A chunk of the sent state plus the connection's call count, and what it saw of the
    image and prompt; raises when asked to."""

    def __init__(self) -> None:
        self.calls = 0

    def infer(self, obs: dict) -> dict:
        if 'fail' in obs:
            raise ValueError('the echo policy was told to fail')
        self.calls += 1
        image = obs['observation/images/cam_head']
        state = obs['observation/state']
        return {
            'actions': np.tile(state, (HORIZON, 1)) + np.float32(self.calls),
            'image_sum': image.sum(dtype=np.int64),  # a numpy scalar
            'image_shape': image.shape,
            'image_dtype': image.dtype.str,
            'prompt': obs['prompt'],
        }


def _clean_env() -> dict:
    # ROS's setup puts our packages (and our venv's numpy 2) on PYTHONPATH.
    drop = {'PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'PYTHONSTARTUP'}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(args: list, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=_clean_env(),
        check=False,
    )


def _openpi_venv() -> Path:
    """The venv's python, made now unless a completed one of these requirements exists."""
    digest = hashlib.sha256(
        REQUIREMENTS.read_bytes() + f'{sys.version_info[:2]}'.encode()
    ).hexdigest()[:16]
    cache = Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'harness'
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f'openpi-client-{digest}'
    stamp = venv / 'harness-complete'
    python = venv / 'bin' / 'python'
    # Two test runs at once make it once: the second waits for the first's stamp.
    with open(cache / f'openpi-client-{digest}.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)  # an interrupted attempt
        made = _run([sys.executable, '-m', 'venv', venv], 300)
        if made.returncode != 0:
            pytest.fail(f'python -m venv {venv} failed:\n{made.stdout}{made.stderr}')
        pip = _run(
            [python, '-I', '-m', 'pip', 'install', '--retries', '2', '--no-deps', '-r',
             REQUIREMENTS],
            900,
        )  # fmt: skip
        if pip.returncode != 0:
            output = pip.stdout + pip.stderr
            shutil.rmtree(venv, ignore_errors=True)
            reason = next((line for line in output.splitlines() if any(
                marker in line for marker in UNREACHABLE)), None)  # fmt: skip
            if reason is not None:
                pytest.skip(
                    f'pip cannot reach a package index to install openpi-client: {reason.strip()}'
                )
            pytest.fail(f'pip could not install {REQUIREMENTS.name} into {venv}:\n{output}')
        stamp.write_text(digest + '\n')
    return python


@pytest.fixture(scope='module')
def openpi_run() -> Iterator[dict]:
    """What the openpi client got from our server (the script's JSON)."""
    python = _openpi_venv()
    with PolicyServer(Echo, METADATA) as server:
        done = _run([python, '-I', '-c', CLIENT_SCRIPT, '127.0.0.1', server.port], 120)
    assert done.returncode == 0, f'the openpi client script failed:\n{done.stdout}{done.stderr}'
    yield json.loads(done.stdout.strip().splitlines()[-1])


def test_openpi_client_reads_metadata_and_chunks(openpi_run: dict) -> None:
    assert openpi_run['numpy'].startswith('1.')  # really openpi's side, not ours
    assert openpi_run['metadata'] == METADATA
    state = np.arange(14, dtype=np.float32) / 10
    for calls, reply in enumerate(openpi_run['replies'], start=1):
        assert reply['dtype'] == 'float32'
        np.testing.assert_allclose(reply['actions'], np.tile(state, (HORIZON, 1)) + calls)
        assert reply['image_sum'] == openpi_run['image_sum']
        assert reply['image_sum_type'] == 'int64'
        assert reply['image_shape'] == [48, 64, 3]
        assert reply['image_dtype'] == '|u1'
        assert reply['prompt'] == 'stack'


def test_openpi_client_raises_our_error(openpi_run: dict) -> None:
    assert openpi_run['error'] is not None, 'the openpi client did not raise'
    assert 'Error in inference server' in openpi_run['error']
    assert 'ValueError: the echo policy was told to fail' in openpi_run['error']
