"""The history: image window, exchange window, bad-format exchanges dropped."""

from harness_driver.history import IMAGE_OMITTED, History, TurnImage

IMG = TurnImage('cam_head now', b'\x89PNG fake')


def texts(messages):
    out = []
    for m in messages:
        if isinstance(m['content'], str):
            out.append(m['content'])
        else:
            out.append(' | '.join(b.get('text', 'IMAGE') for b in m['content']))
    return out


def images(messages):
    return sum(
        1
        for m in messages
        if not isinstance(m['content'], str)
        for b in m['content']
        if b['type'] == 'image'
    )


def test_images_only_in_the_last_turns():
    h = History(keep_images=2, max_history_turns=10)
    h.start('task', [IMG])
    for i in range(3):
        h.reply(f'reply {i}')
        h.answer(f'report {i}', [IMG])
    messages, sent = h.messages()
    assert images(messages) == 2 and len(sent) == 2
    assert IMAGE_OMITTED in texts(messages)[0] and 'task' in texts(messages)[0]
    assert IMAGE_OMITTED in texts(messages)[2]
    assert IMAGE_OMITTED not in texts(messages)[-1]
    assert [m['role'] for m in messages] == ['user'] + ['assistant', 'user'] * 3


def test_no_images_kept():
    h = History(keep_images=0, max_history_turns=10)
    h.start('task', [IMG])
    assert images(h.messages()[0]) == 0


def test_the_first_message_plus_the_last_exchanges():
    h = History(keep_images=1, max_history_turns=2)
    h.start('task', [])
    for i in range(5):
        h.reply(f'reply {i}')
        h.answer(f'report {i}')
    messages, _ = h.messages()
    assert texts(messages) == ['task', 'reply 3', 'report 3', 'reply 4', 'report 4']


def test_bad_format_exchanges_leave_once_a_valid_reply_arrives():
    h = History(keep_images=1, max_history_turns=10)
    h.start('task', [])
    h.bad_reply('no block', 'Format error: ...')
    h.bad_reply('still none', 'Format error: ...')
    assert texts(h.messages()[0])[1:] == [
        'no block',
        'Format error: ...',
        'still none',
        'Format error: ...',
    ]
    h.reply('<python>ok</python>')
    h.answer('report')
    assert texts(h.messages()[0]) == ['task', '<python>ok</python>', 'report']


def test_one_request_carries_at_most_max_images_the_newest():
    """A program that showed many images put 152 in one request: the newest max_images of
    the kept turns go, the older ones are said to be omitted."""
    h = History(keep_images=2, max_history_turns=10, max_images=5)
    h.start('task', [IMG])
    h.reply('reply 0')
    h.answer('report 0', [TurnImage(f'shown {k}', b'png') for k in range(4)])
    h.reply('reply 1')
    h.answer('report 1', [TurnImage(f'later {k}', b'png') for k in range(4)])
    messages, sent = h.messages()
    assert images(messages) == 5 and len(sent) == 5
    assert [i.caption for i in sent] == ['shown 3', 'later 0', 'later 1', 'later 2', 'later 3']
    assert f'{IMAGE_OMITTED} shown 0' in texts(messages)[2]
