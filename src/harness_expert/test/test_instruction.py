"""The instruction parser on the nine bench instructions, some paraphrases, and instructions it
must not pretend to understand."""

import pytest
from harness_bench.tasks import TASKS
from harness_expert.instruction import InstructionError, mentions, parse, tokens


def test_every_bench_instruction_is_understood_as_its_task_kind():
    kinds = {name: parse(task.instruction).kind for name, task in TASKS.items()}
    assert kinds == {
        'lift_cube': 'lift',
        'place_in_bowl': 'place',
        'stack_blocks_two': 'stack',
        'stack_blocks_three': 'stack',
        'press_button': 'press',
        'handover_bar': 'handover',
        'pick_numbered': 'lift',  # it cannot read the dots: it lifts a white cube
        'sort_by_colour': 'sort',
        'push_to_zone': 'push',
    }


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
        ('Click the blue button but not the red button', 'press', {'avoid': ('red',)}),
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
