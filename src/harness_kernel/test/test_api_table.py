"""The API table: every name declared once, handled where it says, and what is made from it."""

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from harness_bench.verifier import Holding, Inside, Raised, Released
from harness_kernel.api_table import (
    API,
    HANDLERS,
    LEARNED_NAMES,
    OPERATOR_NAMES,
    effect_claims,
    markdown,
)
from harness_kernel.contact import ContactSkills
from harness_kernel.foresight import Foresight
from harness_kernel.kernel import Kernel
from harness_kernel.learned import LearnedHalf
from harness_kernel.program_api import ProgramApi, api_reference
from harness_skills.skill_table import SKILLS

KINDS = {
    'object', 'target', 'arm', 'number', 'point3', 'vector2', 'quat', 'joints', 'text', 'prose',
    'function', 'region', 'names', 'image', 'array', 'any',
}  # fmt: skip
GUIDE = Path(__file__).resolve().parents[3] / 'docs' / 'USER_GUIDE.md'


def _implementation(name: str):
    handler = API[name].handler
    return {
        'contact': lambda: getattr(ContactSkills, name),
        'learned': lambda: getattr(LearnedHalf, name),
        'foresight': lambda: getattr(Foresight, name),
        'kernel': lambda: getattr(Kernel, f'_{name}'),
        'program': lambda: getattr(ProgramApi, name),
    }[handler]()


@pytest.mark.parametrize('name', list(API))
def test_each_name_has_a_kind_per_argument_and_a_handler_that_takes_them(name):
    entry = API[name]
    assert entry.handler in HANDLERS and entry.doc, name
    arguments = entry.arguments()
    assert {a.kind for a in arguments} <= KINDS, name
    if entry.handler == 'skill_server':
        assert name in SKILLS
        return
    implementation = inspect.signature(_implementation(name))
    # the kernel calls it with every argument by name (self first)
    implementation.bind(None, **{a.name: a.default for a in arguments})
    if entry.handler == 'program':  # the program's own method has the stub's parameters
        stub = inspect.signature(entry.stub).parameters
        own = list(implementation.parameters.values())[1:]
        assert [(p.name, p.default) for p in own] == [(p.name, p.default) for p in stub.values()]


def test_the_skill_server_runs_exactly_the_names_the_table_gives_it():
    assert set(SKILLS) == {n for n, e in API.items() if e.handler == 'skill_server'}


def test_the_learned_half_is_the_names_that_need_policies():
    assert set(LEARNED_NAMES) == {'list_policies', 'start', 'run_policy', 'predict_future'}


def test_a_kernel_stub_without_a_kind_is_refused():
    def wipe(obj, arm=''):
        """Wipe."""

    from harness_kernel.api_table import ApiName

    with pytest.raises(TypeError, match=r'wipe\(obj\): the stub must annotate'):
        ApiName(wipe, 'contact').arguments()


def test_skill_effects_name_what_was_picked():
    assert effect_claims('pick', {'obj': 'red cube'}, {}) == (
        Holding('', 0.0),
        Raised('red cube', 0.02),
    )
    place = effect_claims('place', {'into': 'blue bowl'}, {'left': 'green block'})
    assert Inside('green block', 'blue bowl') in place and Released('') in place
    assert effect_claims('locate', {'query': 'cube'}, {}) == ()


def test_every_operator_action_has_words_of_its_own():
    """A trial's dataset task: each action in its own words, never the whole task's (a move
    labelled "pick up the red cube and hold it" would teach a policy the wrong thing)."""
    move = {'position': [0.3, -0.2, 1.0], 'arm': 'right'}
    assert API['move_eef'].spoken(move) == 'move the right arm to [0.3, -0.2, 1.0]'
    assert API['release'].spoken({'arm': 'left'}) == 'let go of what the left arm holds'
    assert API['transfer'].spoken({}) == 'hand what you hold over to the other arm'
    assert all(API[n].spoken is not None for n in OPERATOR_NAMES)


def test_the_prompt_reads_every_enabled_stub_without_kinds():
    text = api_reference(['pick', 'locate'])
    assert text.startswith("locate(query='')") and '\n\npick(obj, arm=' in text
    assert 'Annotated' not in api_reference() and '{control_hz' not in api_reference(
        doc_values={'control_hz': 25.0, 'reactive_budget_ms': 20.0, 'max_contact_force_n': 30.0}
    )


def test_the_user_guide_lists_the_api_as_the_table_declares_it():
    text = GUIDE.read_text()
    assert markdown() in text, 'docs/USER_GUIDE.md is out of date: run python tools/api_docs.py'


def test_the_program_process_loads_no_skill_engine_messages_or_bench():
    code = (
        'import json, sys\nimport harness_kernel.program\nprint(json.dumps(sorted(sys.modules)))\n'
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    for forbidden in ('harness_skills', 'harness_msgs', 'harness_bench', 'rclpy', 'harness_driver'):
        assert not [m for m in loaded if m.split('.')[0] == forbidden], forbidden
