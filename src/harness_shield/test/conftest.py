import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_shield.config import shield_config
from harness_shield.shield import Shield
from hypothesis import settings

# Property tests draw the same examples on every run.
settings.register_profile('deterministic', derandomize=True, database=None)
settings.load_profile('deterministic')

# A linear stand-in for forward kinematics (the shield's FK is injected): link6 of each arm sits
# at its base plus (j1, j2, j3) metres, so a test can place link6 exactly where it needs it.
BASES = (np.array([-0.3, -0.2, 0.9]), np.array([0.3, -0.2, 0.9]))


def linear_fk(q):
    q = np.asarray(q, dtype=float)
    return [BASES[0] + q[0:3], BASES[1] + q[7:10]]


@pytest.fixture(scope='session')
def config():
    return shield_config(load_embodiment())


@pytest.fixture
def shield(config):
    return Shield(config, linear_fk)


@pytest.fixture
def home():
    """A measured state inside every limit: joints at 0 except j2, j3 at 0.1; grippers open."""
    q = np.zeros(14)
    q[[1, 2, 8, 9]] = 0.1
    q[[6, 13]] = 1.0
    return q
