"""The workspace's own files that no episode runs: the Dockerfile and the perf scripts."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_dockerfile_gives_rosdep_every_packages_manifest():
    """rosdep sees only the manifests copied before it runs: one left out (harness_expert,
    harness_operator, harness_policy were) installs without its dependencies."""
    text = (ROOT / 'docker' / 'Dockerfile').read_text()
    rosdep = text.index('rosdep install')
    copied = set(re.findall(r'^COPY (src/\S+/package\.xml) ', text[:rosdep], re.M))
    manifests = {str(p.relative_to(ROOT)) for p in ROOT.glob('src/*/package.xml')}
    assert manifests - copied == set()


def test_a_perf_script_runs_without_the_venv_named_an_ament_prefix():
    """perf/worker.py failed with "package 'builtin_interfaces' not found" unless
    AMENT_PREFIX_PATH named the venv by hand: the scripts find the wheels as `harness` does."""
    env = dict(os.environ)
    paths = [p for p in env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    venv = os.path.realpath(sys.prefix)
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(p for p in paths if os.path.realpath(p) != venv)
    if env.get('ROS_DISTRO'):
        env.pop('ROS_DISTRO')  # a sourced installation names its own prefixes
    done = subprocess.run(
        [sys.executable, str(ROOT / 'perf' / 'worker.py'), '--ticks', '10', '--observes', '1'],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])['bench'] == 'worker'
