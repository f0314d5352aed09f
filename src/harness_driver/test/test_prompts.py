"""The system prompt: its parts name configured values as the API's docstrings do, and each is
rendered from the configuration (the model never reads a placeholder or a stale number)."""

import re
from pathlib import Path

import pytest
from harness_driver.prompts import PromptError, system_prompt

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ROOT / 'prompts' / 'harness_bench'
VALUES = {
    'reactive_budget_ms': 20,
    'control_hz': 25.0,
    'max_contact_force_n': 40.0,
    'post_policy_calls': 3,
    'table_top_z': 0.765,
    'table_offset_cm': 1.5,
}


@pytest.mark.parametrize('policies', [False, True])
def test_every_named_value_is_rendered(policies):
    text = ' '.join(system_prompt(PROMPTS, None, VALUES, policies=policies).split())
    names = '|'.join(VALUES)
    assert not re.findall(rf'\{{(?:{names})(?::[^}}]*)?\}}', text)
    assert '{api_reference}' not in text
    assert 'the table top is at z = 0.765' in text and 'up to 1.5 cm' in text
    assert ('3 more model calls' in text) == policies


def test_a_value_changed_in_the_configuration_is_what_the_model_reads():
    text = ' '.join(
        system_prompt(PROMPTS, None, {**VALUES, 'control_hz': 50.0, 'table_top_z': 0.8}).split()
    )
    assert '50 Hz control tick' in text and 'z = 0.8 on the nominal station' in text


def test_a_missing_part_is_named(tmp_path):
    (tmp_path / 'role.md').write_text('role')
    with pytest.raises(PromptError, match='method.md does not exist'):
        system_prompt(tmp_path, None, VALUES)
