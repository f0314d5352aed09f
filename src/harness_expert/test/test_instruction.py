"""The instruction parser on the nine bench instructions, some paraphrases, and instructions it
must not pretend to understand (in whole or in part)."""

import pytest
from harness_bench.tasks import TASKS
from harness_expert.instruction import InstructionError, mentions, parse, tokens


def test_every_bench_instruction_is_understood_as_its_task_kind():
    kinds = {name: parse(TASKS[name].instruction).kind for name in PARSED_KINDS}
    assert kinds == PARSED_KINDS
    # tasks of kinds the expert did not learn: it says it does not understand them (a task
    # added to the bench is not named here: it needs no line in this package)
    for name in NOT_UNDERSTOOD:
        with pytest.raises(InstructionError, match='I do not understand'):
            parse(TASKS[name].instruction)


PARSED_KINDS = {
    'lift_cube': 'lift',
    'place_in_bowl': 'place',
    'stack_blocks_two': 'stack',
    'stack_blocks_three': 'stack',
    'press_button': 'press',
    'handover_bar': 'handover',
    'pick_numbered': 'lift',  # it cannot read the dots: it lifts a white cube
    'sort_by_colour': 'sort',
    'push_to_zone': 'push',
    'lift_tray': 'lift',  # it lifts with one arm: the tray stays on the table
    'pick_moving': 'lift',  # it reaches where the cube was
}
NOT_UNDERSTOOD = ('insert_peg', 'open_drawer', 'pick_pictured', 'press_in_order', 'stack_in_order')


def test_bench_lift_and_pick_numbered():
    plan = parse(TASKS['lift_cube'].instruction)
    assert (plan.target, plan.lift_m, plan.unread) == ('red cube', pytest.approx(0.10), '')
    plan = parse(TASKS['pick_numbered'].instruction)
    assert (plan.target, plan.lift_m) == ('white cube', pytest.approx(0.10))
    assert plan.unread == '3 dots'


def test_bench_place_push_press_handover_sort():
    assert parse(TASKS['place_in_bowl'].instruction).target == 'green block'
    assert parse(TASKS['place_in_bowl'].instruction).destination == 'blue bowl'
    push = parse(TASKS['push_to_zone'].instruction)
    assert (push.target, push.destination) == ('yellow cube', 'green zone')
    press = parse(TASKS['press_button'].instruction)
    assert (press.target, press.avoid) == ('red button', ('blue',))
    hand = parse(TASKS['handover_bar'].instruction)
    assert (hand.target, hand.arm, hand.to_arm) == ('orange bar', 'left', 'right')
    sort = parse(TASKS['sort_by_colour'].instruction)
    assert sort.bins == {'red': 'red bin', 'blue': 'blue bin'}


def test_bench_stacks_bottom_to_top():
    assert parse(TASKS['stack_blocks_two'].instruction).order == ('purple block', 'yellow block')
    three = parse(TASKS['stack_blocks_three'].instruction).order
    assert three == ('red block', 'green block', 'blue block')


@pytest.mark.parametrize(
    'text, kind, fields',
    [
        ('Lift the blue cube 15 cm off the table.', 'lift', {'target': 'blue cube'}),
        ('Grab the green box with the right arm', 'lift', {'arm': 'right'}),
        ('Place the green cube in the blue bin.', 'place', {'destination': 'blue bin'}),
        ('Drop the red block into the bowl', 'place', {'destination': 'bowl'}),
        ('Put the yellow one onto the purple block.', 'stack', {}),
        ('Slide the red cube into the blue area', 'push', {'destination': 'blue area'}),
        ('Click the blue button but not the red button', 'press', {'avoid': ('red button',)}),
        ('Push the green button.', 'press', {'target': 'green button'}),
        ('Hand the bar over to the right hand', 'handover', {'arm': 'left'}),
        ('Give the orange stick from the right arm to the left arm', 'handover', {}),
        ('Sort the cubes by color', 'sort', {'bins': {}}),
    ],
)
def test_paraphrases(text, kind, fields):
    plan = parse(text)
    assert plan.kind == kind
    for key, value in fields.items():
        assert getattr(plan, key) == value


def test_paraphrased_stack_orders():
    assert parse('Stack green on red, then blue on top of the green block').order == (
        'red block',
        'green block',
        'blue block',
    )
    assert parse('Put the yellow one onto the purple block.').order == (
        'purple block',
        'yellow block',
    )
    assert parse('Place the red cube on top of the blue cube').order == ('blue cube', 'red cube')


def test_a_height_in_other_units():
    assert parse('Lift the red cube 150 mm').lift_m == pytest.approx(0.15)
    assert parse('Lift the red cube 15 cm').lift_m == pytest.approx(0.15)


def test_handover_from_the_right_arm():
    plan = parse('Give the orange stick from the right arm to the left arm')
    assert (plan.target, plan.arm, plan.to_arm) == ('orange stick', 'right', 'left')


@pytest.mark.parametrize(
    'text',
    [
        '',
        'Make me a sandwich.',
        'Fold the towel',
        'Open the drawer',
        'Press it.',  # no button named by colour
        'Wave hello to the camera',
    ],
)
def test_instructions_it_does_not_understand(text):
    with pytest.raises(InstructionError):
        parse(text)


def test_mentions_are_locate_queries():
    found = mentions(tokens('Put the Violet small cube, then the gray one, into the bins.'))
    assert [m.query for m in found] == ['purple cube', 'grey', 'bin']


# Review findings: each instruction is read whole, or refused.


@pytest.mark.parametrize(
    'text, arm',
    [
        ('Lift the red cube with the right hand', 'right'),
        ('Pick up the blue block with your left hand.', 'left'),
        ('With one hand, lift the red cube', ''),
    ],
)
def test_a_hand_that_acts_is_no_handover(text, arm):
    plan = parse(text)
    assert (plan.kind, plan.arm) == ('lift', arm)


@pytest.mark.parametrize(
    'text, giver, receiver',
    [
        ('Pick up the orange bar with the left arm and hand it to the right arm.', 'left', 'right'),
        ('Hand over the orange bar to the left hand', 'right', 'left'),
        ('Lift the red cube with the right hand and pass it to the left arm', 'right', 'left'),
        ('Take the bar and give it to the other arm', '', ''),
        ('Do a handover of the orange bar', '', ''),
    ],
)
def test_handover_wording(text, giver, receiver):
    plan = parse(text)
    assert (plan.kind, plan.arm, plan.to_arm) == ('handover', giver, receiver)


@pytest.mark.parametrize(
    'text, kind, target, avoid',
    [
        ('Do not lift the red cube, lift the blue cube', 'lift', 'blue cube', ('red cube',)),
        ("Don't lift the red cube; lift the blue one.", 'lift', 'blue', ('red cube',)),
        ('Lift the cube, not the red one', 'lift', 'cube', ('red',)),
        ('Press the red button, not the blue one.', 'press', 'red button', ('blue',)),
        ("Don't press the blue button, press the red one", 'press', 'red button', ('blue button',)),
        (
            'Push the yellow cube into the green zone without grasping it.',
            'push',
            'yellow cube',
            (),
        ),
        (
            'Put the green block into the blue bowl, not the red bowl',
            'place',
            'green block',
            ('red bowl',),
        ),
    ],
)
def test_negations_name_what_to_leave(text, kind, target, avoid):
    plan = parse(text)
    assert (plan.kind, plan.target, plan.avoid) == (kind, target, avoid)


@pytest.mark.parametrize(
    'text, why',
    [
        ('Do not lift the red cube.', 'only says what not to do'),
        ('Do not lift the red cube, lift the red cube', 'and to leave it'),
        ('Lift the red cube without grasping it', 'without grasping'),
        ('Push the yellow cube into the green zone without touching the red cube', 'touching'),
        ('Lift the red cube, not too fast', 'cannot follow'),
        ('Never stack anything', 'cannot follow'),
    ],
)
def test_negations_it_cannot_keep_are_refused(text, why):
    with pytest.raises(InstructionError, match=why):
        parse(text)


def test_a_pronoun_carries_the_object_into_the_next_clause():
    plan = parse('Pick up the red cube and put it on the blue cube')
    assert (plan.kind, plan.order) == ('stack', ('blue cube', 'red cube'))
    plan = parse('Pick up the green block and put it into the blue bowl')
    assert (plan.kind, plan.target, plan.destination) == ('place', 'green block', 'blue bowl')


@pytest.mark.parametrize(
    'text',
    [
        'Lift the red cube and shake it',
        'Lift the red cube and the blue cube',
        'Lift the red cube from the blue bowl',
        'Press the red button, then the blue button',
        'Push the yellow cube into the green zone and put the red cube into the bowl',
        'Stack the red block on the green block and put the blue block into the bowl',
        'Pick up the red cube and press the green button',
        'Put the green block into the blue bowl and hand it to the right arm',
    ],
)
def test_a_part_it_does_not_understand_is_not_dropped(text):
    with pytest.raises(InstructionError):
        parse(text)


@pytest.mark.parametrize(
    'text, kind, unread',
    [
        ('Put the cube with 3 dots into the bowl', 'place', '3 dots'),
        ('Push the cube labelled A into the green zone', 'push', 'labelled'),
        ('Hand the bar with the star over to the right arm', 'handover', 'star'),
        ('Lift cube 2', 'lift', 'cube 2'),
        ('Press the red button with the picture of a cat', 'press', 'picture'),
    ],
)
def test_what_it_cannot_read_is_kept_for_every_kind(text, kind, unread):
    plan = parse(text)
    assert (plan.kind, plan.unread) == (kind, unread)


def test_sorting_by_what_it_cannot_read_is_refused():
    with pytest.raises(InstructionError, match='cannot read'):
        parse('Sort the blocks by the number on them')


@pytest.mark.parametrize('height', ['50 cm', '1 m', '0 cm', '-5 cm', '450 mm'])
def test_a_lift_height_out_of_range_is_refused(height):
    with pytest.raises(InstructionError, match='no height'):
        parse(f'Lift the red cube {height}')
    assert parse('Lift the red cube 40 cm').lift_m == pytest.approx(0.40)


def test_the_quoted_instruction_is_clipped():
    text = 'Fold ' + 'the towel ' * 200
    with pytest.raises(InstructionError) as caught:
        parse(text)
    assert len(str(caught.value)) < 400
    assert 'the towel the towel' in str(caught.value)
