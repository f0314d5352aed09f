import json

import pytest
from harness_operator.actions import ActionError, cell_source, parse_action


def test_a_skill_action_becomes_one_api_call_with_literal_arguments():
    a = parse_action({'skill': 'pick', 'object': 'green block', 'arm': 'left'})
    code = cell_source(a)
    compile(code, '<test>', 'exec')
    assert "pick(_object('green block'), arm='left')" in code
    place = cell_source(parse_action({'skill': 'place', 'into': 'blue bowl'}))
    assert "place(into=_object('blue bowl'))" in place


def test_an_action_is_read_from_json_text_and_canonical_text_ignores_key_order():
    a = parse_action('{"object": "red cube", "skill": "pick", "lift": 0.1}')
    b = parse_action({'skill': 'pick', 'lift': 0.1, 'object': 'red cube'})
    assert a.canonical() == b.canonical()


def test_a_hostile_object_name_stays_a_string_literal():
    name = "x') or __import__('os').system('true') or ('"
    code = cell_source(parse_action({'skill': 'pick', 'object': name}))
    compile(code, '<test>', 'exec')
    assert f'_object({name!r})' in code
    assert '__import__' not in code.replace(repr(name), '')


@pytest.mark.parametrize(
    ('action', 'says'),
    [
        ([1, 2], 'an action is an object'),
        ('{not json', 'not JSON'),
        ({'skill': 'fly'}, "unknown skill 'fly'"),
        ({'skill': 'pick'}, 'pick needs object'),
        ({'skill': 'pick', 'object': 'cube', 'speed': 2}, "no argument 'speed'"),
        ({'skill': 'pick', 'object': ''}, 'must name an object'),
        ({'skill': 'pick', 'object': 'cube', 'arm': 'middle'}, "'left', 'right'"),
        ({'skill': 'pick', 'object': 'cube', 'lift': float('nan')}, 'finite number'),
        ({'skill': 'pick', 'object': 'cube', 'lift': True}, 'finite number'),
        ({'skill': 'place', 'into': 'bowl', 'onto': 'box'}, 'exactly one of'),
        ({'skill': 'place'}, 'exactly one of'),
        ({'skill': 'push', 'object': 'c', 'direction': [1], 'distance': 0.1}, 'list of 2'),
        ({'skill': 'push', 'object': 'c', 'direction': [1, 0], 'distance': 2}, 'within (0, 0.3]'),
        ({'skill': 'move_eef', 'position': [0, 0, 0.2]}, 'move_eef needs arm'),
        ({'program': 'def (:'}, 'does not compile'),
        ({'program': ''}, 'text of a Python cell'),
        ({'program': 'x = 1', 'key': 'k'}, 'only "program"'),
    ],
)
def test_a_malformed_action_says_what_is_wrong(action, says):
    with pytest.raises(ActionError, match=None) as info:
        parse_action(action)
    assert says in str(info.value)


def test_a_program_action_is_the_program_itself():
    a = parse_action({'program': 'print(1)\n'})
    assert cell_source(a) == 'print(1)\n'
    assert json.loads(a.canonical()) == {'program': 'print(1)\n'}
