"""Reply parsing: one block after an optional thought, anything else a clear format error."""

import pytest
from harness_types.reply import FormatError, format_error_message, parse_reply


@pytest.mark.parametrize(
    'text,kind,body,thought',
    [
        ('<python>\nprint(1)\n</python>', 'python', 'print(1)', ''),
        (
            'Look first.\n<python>\nx = locate()\n</python>\n',
            'python',
            'x = locate()',
            'Look first.',
        ),
        ('<python>\n```python\nprint(2)\n```\n</python>', 'python', 'print(2)', ''),
        ('<verify> the cube is in the bowl </verify>', 'verify', 'the cube is in the bowl', ''),
        ('Done.\n<finish>stacked</finish>', 'finish', 'stacked', 'Done.'),
        ('<finish></finish>', 'finish', '', ''),
    ],
)
def test_valid_replies(text, kind, body, thought):
    reply = parse_reply(text)
    assert (reply.kind, reply.body.strip(), reply.thought) == (kind, body, thought)


@pytest.mark.parametrize(
    'text,why',
    [
        ('I will pick the cube.', 'no <python>, <verify> or <finish> block'),
        ('<python>\nprint(1)\n', '<python> is never closed'),
        ('<python>a=1</python><python>b=2</python>', 'has 2 blocks (<python>, <python>)'),
        ('<python>a=1</python>\nThen I will look.', "text after the </python> block: 'Then"),
        ('<python>\n\n</python>', 'the <python> block is empty'),
        ('<verify> </verify>', 'the <verify> block is empty'),
    ],
)
def test_format_errors_say_what_is_wrong(text, why):
    with pytest.raises(FormatError) as exc:
        parse_reply(text)
    assert why in str(exc.value)
    message = format_error_message(exc.value)
    assert message.startswith('Format error: ') and 'Nothing ran.' in message
