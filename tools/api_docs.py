#!/usr/bin/env python3
"""Write the program API's table (harness_kernel.api_table.markdown) into docs/USER_GUIDE.md,
between its markers. `--check` only says whether the file is current (exit 1 if not).

    python tools/api_docs.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness_kernel.api_table import markdown

GUIDE = Path(__file__).resolve().parents[1] / 'docs' / 'USER_GUIDE.md'
BEGIN = '<!-- api-table: written by tools/api_docs.py from harness_kernel/api_table.py -->'
END = '<!-- /api-table -->'


def rewritten(text: str) -> str:
    """`text` with the block between the markers replaced by the table."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f'{GUIDE} has no {BEGIN!r} ... {END!r} block')
    return text[: start + len(BEGIN)] + '\n' + markdown() + '\n' + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='only check; exit 1 when stale')
    args = parser.parse_args()
    text = GUIDE.read_text()
    new = rewritten(text)
    if args.check:
        if new != text:
            print(f'{GUIDE} is out of date: run python tools/api_docs.py', file=sys.stderr)
            return 1
        return 0
    GUIDE.write_text(new)
    print(f'wrote the API table into {GUIDE}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
