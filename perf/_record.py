"""What every perf script prints: its figures as JSON with the machine they were measured on
(cores, load average before and after, Python, the commit, the time) and each of its targets,
met or not. With `--save` the JSON is also written to perf/results/<bench>.json, from which
tools/perf_docs.py writes docs/PERFORMANCE.md (the figures a reader sees are the last saved
ones, with their machine and load)."""

from __future__ import annotations

import argparse
import datetime
import json
import operator
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / 'results'
_COMPARE = {
    '<': operator.lt,
    '<=': operator.le,
    '>': operator.gt,
    '>=': operator.ge,
    '==': operator.eq,
}


@dataclass(frozen=True)
class Target:
    """`what` (words) holds when the measured `value` compares (`op`) with `bound`."""

    what: str
    value: float
    op: str
    bound: float
    unit: str = ''

    def as_dict(self) -> dict:
        return {
            'what': self.what,
            'measured': self.value,
            'op': self.op,
            'bound': self.bound,
            'unit': self.unit,
            'met': bool(_COMPARE[self.op](self.value, self.bound)),
        }


def add_save_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        '--save',
        action='store_true',
        help='also write the JSON to perf/results/<bench>.json (docs/PERFORMANCE.md is written '
        'from those by tools/perf_docs.py)',
    )


def machine(load_before: tuple[float, float, float]) -> dict:
    """Where and when it ran: what makes a figure comparable to another."""
    commit = _git('rev-parse', '--short', 'HEAD')
    if commit and _git('status', '--porcelain', '--untracked-files=no', '--', 'src', 'perf'):
        commit += ' with uncommitted changes'
    return {
        'cores': os.cpu_count(),
        'load_before': [round(v, 2) for v in load_before],
        'load_after': [round(v, 2) for v in os.getloadavg()],
        'python': platform.python_version(),
        'platform': platform.platform(terse=True),
        'commit': commit,
        'at': datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC'),
        'command': ' '.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ['git', *args], capture_output=True, text=True, check=False,
            cwd=Path(__file__).parent,
        ).stdout.strip()  # fmt: skip
    except OSError:
        return ''


LOAD_AT_START = os.getloadavg()


def report(result: dict, targets: list[Target] = (), save: bool = False) -> dict:
    """Print `result` (it names its `bench`) with the machine and the targets as one JSON line;
    with `save`, write it to perf/results/<bench>.json too. Returns what was printed."""
    out = {**result, 'machine': machine(LOAD_AT_START), 'targets': [t.as_dict() for t in targets]}
    text = json.dumps(out)
    print(text)
    if save:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f'{result["bench"]}.json').write_text(json.dumps(out, indent=2) + '\n')
    return out
