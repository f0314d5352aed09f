"""What a locate() query asks for: words every match must carry, and a cheap selector
('left', 'right', 'biggest', 'smallest') that keeps the one extreme match."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from harness_types.scene import LocatedObject

SYNONYMS = {'gray': 'grey', 'violet': 'purple', 'magenta': 'purple', 'objects': 'object'}
IGNORED = {'the', 'a', 'an', 'all', 'any', 'every', 'object', 'thing', 'one', 'of', 'on', 'in'}
SELECTORS: dict[str, tuple[Callable[[np.ndarray, np.ndarray], float], int]] = {
    # name: (key of an object's (position, size), +1 keep the largest / -1 the smallest)
    'left': (lambda p, s: p[0], -1),
    'leftmost': (lambda p, s: p[0], -1),
    'right': (lambda p, s: p[0], 1),
    'rightmost': (lambda p, s: p[0], 1),
    'biggest': (lambda p, s: float(np.prod(s)), 1),
    'largest': (lambda p, s: float(np.prod(s)), 1),
    'smallest': (lambda p, s: float(np.prod(s)), -1),
}


def _word(w: str) -> str:
    return SYNONYMS.get(w, w)


@dataclass(frozen=True)
class Query:
    words: tuple[str, ...]
    selector: str = ''

    @staticmethod
    def parse(text: str) -> Query:
        raw = [_word(w) for w in str(text).lower().replace('_', ' ').replace(',', ' ').split()]
        selectors = [w for w in raw if w in SELECTORS]
        words = tuple(w for w in raw if w not in SELECTORS and w not in IGNORED)
        return Query(words, selectors[-1] if selectors else '')

    def matches(self, words: set[str]) -> bool:
        """Every word of the query is one of the object's words (a plural 's' may be added)."""
        known = {_word(w) for w in words}
        return all(w in known or (w.endswith('s') and w[:-1] in known) for w in self.words)

    def select(self, found: Sequence[LocatedObject]) -> list[LocatedObject]:
        """The matches, or only the extreme one when the query has a selector and there are
        several."""
        if not self.selector or len(found) < 2:
            return list(found)
        measure, sign = SELECTORS[self.selector]
        return [max(found, key=lambda o: sign * measure(o.position, o.size))]
