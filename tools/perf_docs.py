#!/usr/bin/env python3
"""Write docs/PERFORMANCE.md from the perf scripts' saved results (perf/results/*.json, written
by `python perf/<script>.py --save`): each target with what was measured and whether it is
met, each script's figures with the machine, load and commit they were measured on, and what
each script measures (its own docstring). `--check` only says whether the file is current.

    python tools/perf_docs.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / 'perf'
RESULTS = PERF / 'results'
DOC = ROOT / 'docs' / 'PERFORMANCE.md'
MAX_FIGURES = 40  # figures listed per script (the JSON has them all)


def scripts() -> dict[str, str]:
    """Each perf script's name and the first paragraph of its docstring."""
    out = {}
    for path in sorted(PERF.glob('*.py')):
        if path.name.startswith('_'):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ''
        out[path.stem] = ' '.join(doc.split('\n\n')[0].split())
    return out


def figures(value, prefix: str = '') -> list[tuple[str, str]]:
    """The scalar figures of a result, by their dotted key (lists of records are left to the
    JSON)."""
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ('machine', 'targets', 'bench'):
                continue
            out += figures(v, f'{prefix}{k}.' if prefix or k else '')
    elif (
        isinstance(value, bool | int | float | str)
        or value is None
        or isinstance(value, list)
        and all(isinstance(v, int | float) for v in value)
    ):
        out.append((prefix.rstrip('.'), json.dumps(value)))
    return out


def _where(machine: dict) -> str:
    load = machine.get('load_before', ['?'])[0]
    return (
        f'{machine.get("at", "?")}, commit {machine.get("commit") or "?"}, '
        f'{machine.get("cores", "?")} cores, load {load} before / '
        f'{machine.get("load_after", ["?"])[0]} after'
    )


def _measured(name: str, r: dict) -> list[str]:
    """A saved result's lines: where and how it was measured, and its figures."""
    machine = r.get('machine', {})
    lines = [f'Measured {_where(machine)}: `{machine.get("command", "")}`.', '']
    found = figures(r)
    if found:
        lines += ['| figure | value |', '|---|---|']
        lines += [f'| `{k}` | {v} |' for k, v in found[:MAX_FIGURES]]
        if len(found) > MAX_FIGURES:
            lines.append(f'| ... | {len(found) - MAX_FIGURES} more in perf/results/{name}.json |')
        lines.append('')
    return lines


def render() -> str:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob('*.json'))}
    about = scripts()
    lines = [
        '# Performance',
        '',
        '<!-- written by tools/perf_docs.py from perf/results/*.json; do not edit -->',
        '',
        'Every figure here was measured by a script under `perf/` and saved with `--save`',
        '(`python perf/<script>.py --save`, in the environment `make perf` sets up); the machine,',
        'its load and the commit are given with each. These machines are noisy: compare figures',
        'measured side by side in one run (`perf/bench.py --base-tree` runs two checkouts in',
        'turn), not across dates. Regenerate this file with `python tools/perf_docs.py`.',
        '',
        '## Targets',
        '',
        '| script | target | measured | bound | met |',
        '|---|---|---|---|---|',
    ]
    for name, r in results.items():
        for t in r.get('targets', []):
            unit = f' {t["unit"]}' if t.get('unit') else ''
            lines.append(
                f'| `{name}` | {t["what"]} | {t["measured"]}{unit} | {t["op"]} {t["bound"]}{unit} '
                f'| {"yes" if t["met"] else "**no**"} |'
            )
    lines += ['', '## The scripts', '']
    for name, text in about.items():
        r = results.get(name)
        lines += [f'### `perf/{name}.py`', '', text, '']
        if r is None:
            lines += [f'No saved result yet: `python perf/{name}.py --save`.', '']
            continue
        lines += _measured(name, r)
    for name, r in results.items():  # saved apart by a script's option (bench --jobs J)
        if name not in about:
            lines += [f'### `{name}`', ''] + _measured(name, r)
    return '\n'.join(lines).rstrip() + '\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='only check; exit 1 when stale')
    args = parser.parse_args()
    text = render()
    if args.check:
        current = DOC.read_text() if DOC.exists() else ''
        if current != text:
            print(f'{DOC} is out of date: run python tools/perf_docs.py', file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f'wrote {DOC} from {len(list(RESULTS.glob("*.json")))} saved results')
    return 0


if __name__ == '__main__':
    sys.exit(main())
