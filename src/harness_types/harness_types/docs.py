"""Docstrings the model reads, with configured values rendered into them."""

from __future__ import annotations

import re

_FIELD = re.compile(r'\{([a-z_]+)(?::([^{}]*))?\}')


def render_doc(doc: str, values: dict) -> str:
    """`doc` with each `{name}` or `{name:format}` whose name is in `values` replaced by the
    formatted value; every other brace is left as written (dict literals in examples)."""

    def replace(match: re.Match) -> str:
        name, spec = match.group(1), match.group(2) or ''
        return format(values[name], spec) if name in values else match.group(0)

    return _FIELD.sub(replace, doc)
