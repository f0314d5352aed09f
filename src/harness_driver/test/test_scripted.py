"""The scripted baseline: reference cells in order, one retry from home, then it gives up."""

from harness_driver.models import Decision, ModelRequest, ScriptedModel
from harness_driver.requests import request_size
from harness_driver.verifier_model import parse_verdict
from harness_types.reply import BLOCKS, parse_reply
from harness_types.scene import ClaimAnswer


def ask(model, reason, event='', kinds=BLOCKS):
    reply = model.complete(ModelRequest('', [], 100, Decision(reason, 1, '', event)))
    return parse_reply(reply.text, kinds)


def test_cells_in_order_then_finish():
    model = ScriptedModel(['a = 1\n', 'b = 2\n'])
    assert ask(model, 'start').body == 'a = 1'
    assert ask(model, 'program_end').body == 'b = 2'
    assert ask(model, 'program_end').kind == 'finish'


def test_a_failed_cell_is_retried_once_from_home_then_given_up():
    model = ScriptedModel(['pick(cube)\n', 'place()\n'])
    ask(model, 'start')
    retry = ask(model, 'escalation', 'SKILL_ERROR')
    assert retry.kind == 'python' and retry.body.startswith('home()\npick(cube)')
    assert ask(model, 'program_end').body == 'place()'  # the retry worked: next step
    ask(model, 'error')
    give_up = ask(model, 'error')
    assert give_up.kind == 'finish' and 'failed twice' in give_up.body


def test_a_rung_without_retries_gives_up_at_the_first_failure_saying_so():
    motions = "the reference program's recorded motions"
    model = ScriptedModel(['{"arm": "left", "gripper": 0.0}'], 0, 'action', motions)
    rung = ('action', 'verify', 'finish')
    assert ask(model, 'start', kinds=rung).kind == 'action'
    give_up = ask(model, 'escalation', 'SHIELD_REJECT', rung)
    assert give_up.kind == 'finish'
    assert give_up.body == f'gave up: step 1 of {motions} failed (SHIELD_REJECT)'


def test_verdicts():
    assert parse_verdict('YES. It is in the bowl.') == ClaimAnswer(True, True, 'It is in the bowl.')
    assert parse_verdict('no - it fell off').yes is False
    assert parse_verdict('Maybe.').answered is False


def test_request_size_counts_text_and_images():
    messages = [
        {
            'role': 'user',
            'content': [
                {'type': 'text', 'text': 'abc'},
                {'type': 'image', 'source': {'data': 'AAAA'}},
            ],
        },
        {'role': 'assistant', 'content': 'de'},
    ]
    assert request_size('sys', messages) == (8, 1, 3)


def test_a_program_that_reads_the_instruction_is_given_it():
    from harness_driver.report import TASK_PREFIX, instruction_in

    text = 'Task: Stack the blocks in this order, bottom to top: blue, red, green.\nDescription: x'
    messages = [{'role': 'user', 'content': [{'type': 'text', 'text': text}]}]
    assert instruction_in(messages).endswith('blue, red, green.')
    assert instruction_in([]) == '' and instruction_in([{'content': 'no task here'}]) == ''
    assert text.startswith(TASK_PREFIX)  # what start_text writes first
    model = ScriptedModel(["order = INSTRUCTION.split(': ')[1]\n", 'b = 2\n'])
    first = model.complete(ModelRequest('', messages, 100, Decision('start', 1)))
    body = parse_reply(first.text).body
    assert body.startswith("INSTRUCTION = 'Stack the blocks in this order, bottom to top: blue")
    second = model.complete(ModelRequest('', messages, 100, Decision('program_end', 2)))
    assert 'INSTRUCTION =' not in second.text
    plain = ScriptedModel(['a = 1\n'])  # a program that does not read it is not given it
    reply = plain.complete(ModelRequest('', messages, 100, Decision('start', 1)))
    assert 'INSTRUCTION' not in reply.text
