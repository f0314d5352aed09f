"""The conversation the model sees: text kept, images only in the last turns, a window of
exchanges, and bad-format exchanges dropped once a valid reply arrives."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

IMAGE_OMITTED = '[earlier image omitted]'


@dataclass(frozen=True)
class TurnImage:
    caption: str
    png: bytes


@dataclass
class Turn:
    role: str  # user | assistant
    text: str
    images: list[TurnImage] = field(default_factory=list)
    bad_format: bool = False  # part of an exchange whose reply had no valid block


class History:
    """`keep_images`: user turns (counted from the end) that keep their images.
    `max_history_turns`: exchanges (reply + answer) kept after the first message.
    `max_images`: images in one request at most, the newest kept (None: no bound)."""

    def __init__(
        self, keep_images: int, max_history_turns: int, max_images: int | None = None
    ) -> None:
        self.keep_images = keep_images
        self.max_history_turns = max_history_turns
        self.max_images = max_images
        self.turns: list[Turn] = []

    def start(self, text: str, images: list[TurnImage]) -> None:
        self.turns = [Turn('user', text, list(images))]

    def reply(self, text: str) -> None:
        """A valid reply: earlier bad-format exchanges leave the history."""
        self.turns = [t for t in self.turns if not t.bad_format]
        self.turns.append(Turn('assistant', text))

    def bad_reply(self, text: str, answer: str) -> None:
        """A reply without a valid block and the format error it got."""
        self.turns.append(Turn('assistant', text, bad_format=True))
        self.turns.append(Turn('user', answer, bad_format=True))

    def answer(self, text: str, images: list[TurnImage] | None = None) -> None:
        """The harness's answer to the last reply (turn report, verdict)."""
        self.turns.append(Turn('user', text, list(images or [])))

    def window(self) -> list[Turn]:
        """The turns sent: the first message plus the last `max_history_turns` exchanges."""
        first, rest = self.turns[:1], self.turns[1:]
        keep = 2 * self.max_history_turns
        return first + (rest[-keep:] if keep else [])

    def messages(self) -> tuple[list[dict], list[TurnImage]]:
        """Messages API `messages` and the images they carry (in order)."""
        window = self.window()
        with_images = [i for i, t in enumerate(window) if t.role == 'user' and t.images]
        keep = set(with_images[-self.keep_images :]) if self.keep_images else set()
        # The newest images of the kept turns, at most max_images of them.
        chosen = [(i, k) for i in sorted(keep) for k in range(len(window[i].images))]
        if self.max_images is not None:
            chosen = chosen[len(chosen) - min(len(chosen), self.max_images) :]
        chosen_set = set(chosen)
        messages, sent = [], []
        for i, turn in enumerate(window):
            if turn.role == 'assistant':
                messages.append({'role': 'assistant', 'content': turn.text})
                continue
            content: list[dict] = []
            for k, image in enumerate(turn.images):
                if (i, k) in chosen_set:
                    if image.caption:
                        content.append({'type': 'text', 'text': image.caption})
                    content.append(_image_block(image.png))
                    sent.append(image)
                else:
                    content.append({'type': 'text', 'text': f'{IMAGE_OMITTED} {image.caption}'})
            content.append({'type': 'text', 'text': turn.text})
            messages.append({'role': 'user', 'content': content})
        return messages, sent


def _image_block(png: bytes) -> dict:
    return {
        'type': 'image',
        'source': {
            'type': 'base64',
            'media_type': 'image/png',
            'data': base64.b64encode(png).decode('ascii'),
        },
    }
