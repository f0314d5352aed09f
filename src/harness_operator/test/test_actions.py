import json

import pytest
from harness_kernel.api_table import API, OPERATOR_KINDS
from harness_operator.actions import SKILL_ARGS, ActionError, cell_source, parse_action


def test_a_skill_action_becomes_one_api_call_with_literal_arguments():
    a = parse_action({'skill': 'pick', 'obj': 'green block', 'arm': 'left'})
    code = cell_source(a)
    compile(code, '<test>', 'exec')
    assert "pick(arm='left', obj=_object('green block'))" in code
    place = cell_source(parse_action({'skill': 'place', 'into': 'blue bowl'}))
    assert "place(into=_object('blue bowl'))" in place


def test_an_action_is_read_from_json_text_and_canonical_text_ignores_key_order():
    a = parse_action('{"obj": "red cube", "skill": "pick", "lift": 0.1}')
    b = parse_action({'skill': 'pick', 'lift': 0.1, 'obj': 'red cube'})
    assert a.canonical() == b.canonical()


def test_a_hostile_object_name_stays_a_string_literal():
    name = "x') or __import__('os').system('true') or ('"
    code = cell_source(parse_action({'skill': 'pick', 'obj': name}))
    compile(code, '<test>', 'exec')
    assert f'_object({name!r})' in code
    assert '__import__' not in code.replace(repr(name), '')


@pytest.mark.parametrize(
    ('action', 'says'),
    [
        ([1, 2], 'an action is an object'),
        ('{not json', 'not JSON'),
        ({'skill': 'fly'}, "unknown skill 'fly'"),
        ({'skill': 'pick'}, 'pick needs obj'),
        ({'skill': 'pick', 'obj': 'cube', 'speed': 2}, "no argument 'speed'"),
        ({'skill': 'pick', 'obj': ''}, 'must name an object'),
        ({'skill': 'pick', 'obj': 'cube', 'arm': 'middle'}, "'left', 'right'"),
        ({'skill': 'pick', 'obj': 'cube', 'lift': float('nan')}, 'finite number'),
        ({'skill': 'pick', 'obj': 'cube', 'lift': True}, 'finite number'),
        ({'skill': 'place', 'into': 'bowl', 'onto': 'box'}, 'exactly one of'),
        ({'skill': 'place'}, 'exactly one of'),
        ({'skill': 'push', 'obj': 'c', 'direction': [1], 'distance': 0.1}, 'list of 2'),
        ({'skill': 'push', 'obj': 'c', 'direction': [1, 0], 'distance': 2}, 'within (0, 0.3]'),
        ({'skill': 'move_eef', 'arm': 'left'}, 'move_eef needs position'),
        (
            {'skill': 'move_eef', 'position': [0, 0, 1], 'speed': -5},
            'speed must be 0 (the default)',
        ),
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


def test_do_action_advertises_a_schema_per_action_kind():
    """do_action's input schema accepted any object as the action: each kind (a skill with its
    arguments, a program, a policy) now has its own, made from SKILL_ARGS, so a client
    validates before calling; and what parse_action takes, the schema takes."""
    import anyio
    import jsonschema
    from harness_operator.actions import SKILL_ARGS, parse_action
    from harness_operator.mcp_server import SessionHolder, build_server

    async def schemas(policies):
        server = build_server(SessionHolder(None), policies=policies)
        tools = {t.name: t.input_schema for t in await server.list_tools()}
        return tools['do_action']['properties']['action'], tools['run_batch']

    action, batch = anyio.run(schemas, True)
    without, _ = anyio.run(schemas, False)  # no policy action offered without policies
    assert [k['title'] for k in without['oneOf']] == [*SKILL_ARGS, 'program']
    assert len(action['oneOf']) == len(SKILL_ARGS) + 2
    check = jsonschema.Draft202012Validator(action)
    good = [
        {'skill': 'pick', 'obj': 'red cube', 'arm': 'left', 'lift': 0.1},
        {'skill': 'place', 'onto': {'label': 'blue block', 'near': [0.1, 0.2, 0.8]}},
        {'skill': 'move_eef', 'position': [0.1, 0.0, 1.0], 'arm': 'right', 'quat': None},
        {'skill': 'press', 'target': [0.1, 0.0, 0.8]},
        {'program': 'print(1)'},
        {'policy': 'act_lift_cube', 'instruction': 'lift the cube'},
    ]
    for a in good:
        parse_action(a)
        assert check.is_valid(a), a
    bad = [
        {'skill': 'pick'},  # object is required
        {'skill': 'fly'},
        {'skill': 'home', 'arm': 'up'},
        {'skill': 'move_eef', 'position': [0.1, 0.0], 'arm': 'left'},
        {'skill': 'pick', 'obj': 'cube', 'speed': 1.0},  # no such argument
        {'program': ''},
        {'program': 'x = 1', 'skill': 'home'},
    ]
    for a in bad:
        assert not check.is_valid(a), a
    step = batch['properties']['actions']['items']
    assert step['properties']['action']['oneOf'] == action['oneOf']
    assert step['required'] == ['action', 'key']


def test_the_operator_offers_the_kinds_an_action_can_carry():
    assert SKILL_ARGS['pick']['obj'] == ('object', True)
    assert SKILL_ARGS['pick']['toward'] == ('target?', False)
    assert 'region' not in SKILL_ARGS['move_eef']
    for name, table in SKILL_ARGS.items():
        assert API[name].operator
        assert {kind.rstrip('?') for kind, _ in table.values()} <= OPERATOR_KINDS


def test_the_earlier_name_of_the_object_argument_still_reads():
    """Journals and clients from before the API table called pick's object "object"."""
    assert parse_action({'skill': 'pick', 'object': 'red cube'}) == parse_action(
        {'skill': 'pick', 'obj': 'red cube'}
    )


def test_null_for_an_argument_that_may_be_null_is_the_argument_left_out():
    a = parse_action({'skill': 'place', 'into': 'blue bowl', 'onto': None, 'position': None})
    assert a.args == {'into': 'blue bowl'}
    with pytest.raises(ActionError, match='exactly one of into, onto or position'):
        parse_action({'skill': 'place', 'into': None})


def test_numbers_past_a_floats_range_and_huge_values_are_refused_in_one_short_line():
    with pytest.raises(ActionError, match='must be a finite number'):
        parse_action({'skill': 'move_eef', 'position': [10**400, 0, 0]})
    for action in (
        {'skill': 'pick', 'obj': 'x' * 10_000_000},
        {'skill': 'x' * 10_000_000},
        {'skill': 'pick', 'obj': 'cube', 'y' * 10_000_000: 1},
        {'skill': 'pick', 'obj': 'cube', 'arm': 'z' * 10_000_000},
    ):
        with pytest.raises(ActionError) as info:
            parse_action(action)
        assert len(str(info.value)) < 500, str(info.value)[:200]


def test_an_action_spelt_with_its_defaults_or_extra_spaces_is_the_same_action():
    """A retry is the same action however it is spelt (the retry budget counts it)."""
    plain = parse_action({'skill': 'pick', 'obj': 'red cube'})
    for spelt in (
        {'skill': 'pick', 'obj': 'red cube', 'arm': ''},
        {'skill': 'pick', 'obj': 'red cube', 'lift': 0.12},
        {'skill': 'pick', 'obj': '  red   cube '},
    ):
        assert parse_action(spelt).as_json() == plain.as_json()
    assert parse_action({'skill': 'pick', 'obj': 'red cube', 'lift': 0.2}) != plain
