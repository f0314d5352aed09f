"""A model request's size (what the cost cap and the summary count) and whether a reply can be
used at all. Pure."""

from __future__ import annotations

import base64
import struct

from harness_driver.models import ModelReply

CHARS_PER_TOKEN = 3  # a cautious estimate for the cost cap (English text is ~3.5-4)


def _text_and_images(system: str, messages: list[dict]) -> tuple[int, list[str]]:
    """A request's characters of text and its images (base64 PNG)."""
    chars, images = len(system), []
    for m in messages:
        content = m['content']
        if isinstance(content, str):
            chars += len(content)
            continue
        for block in content:
            if block['type'] == 'text':
                chars += len(block['text'])
            else:
                images.append(block['source']['data'])
    return chars, images


def request_size(system: str, messages: list[dict]) -> tuple[int, int, int]:
    """Characters of text, number of images and bytes of PNG in one request."""
    chars, images = _text_and_images(system, messages)
    return chars, len(images), sum(len(data) * 3 // 4 for data in images)


def estimate_tokens(system: str, messages: list[dict]) -> int:
    """A cautious estimate of a request's input tokens (text by characters, images by pixels
    as Anthropic counts them: width x height / 750), for the cost cap's worst case."""
    chars, images = _text_and_images(system, messages)
    tokens = 0
    for data in images:
        width, height = struct.unpack('>II', base64.b64decode(data[:32])[16:24])
        tokens += width * height // 750 + 1
    return tokens + chars // CHARS_PER_TOKEN + 1


# No tokenizer makes a token of more characters than this on average (English runs ~4): a reply
# longer than max_tokens of them was not limited by max_tokens, whatever its usage says.
MAX_CHARS_PER_TOKEN = 16


def recorded_reply(text: str, max_tokens: int) -> str:
    """A reply's text as the run folder keeps it: whole, unless it is longer than a reply of
    `max_tokens` can be (refused, reply_problem; kept whole it would fill the events, the
    report and the bag three times over): then its start and how much more there was."""
    most = max_tokens * MAX_CHARS_PER_TOKEN
    if len(text) <= most:
        return text
    return f'{text[:most]}\n[{len(text) - most} more characters, not kept]'


def reply_problem(reply: ModelReply, max_tokens: int) -> str:
    """Why a reply cannot be used at all (empty, no text, cut off, longer than max_tokens
    allows), or ''."""
    if len(reply.text) > max_tokens * MAX_CHARS_PER_TOKEN:
        return (
            f'the reply holds {len(reply.text)} characters, more than a reply of max_tokens '
            f'({max_tokens} tokens) can'
        )
    if reply.stop_reason == 'max_tokens':
        return (
            f'the reply was cut off at max_tokens ({max_tokens} tokens) after '
            f'{len(reply.text)} characters, before its block was complete; write a shorter '
            'program (split the work over several turns)'
        )
    if not reply.text.strip():
        if reply.other_blocks:
            return (
                f'the reply holds no text, only {", ".join(reply.other_blocks)} block(s); '
                'answer in text'
            )
        return 'the reply is empty'
    return ''
