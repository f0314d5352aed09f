"""What became of an episode's bag, for its summary: the recorder's closing report (the
`recorded {...}` line it prints, in the run folder's recorder.out) and the verdict on it. Read
by the graph that stopped the recorder, and by a supervisor whose episode process died."""

from __future__ import annotations

import json
from pathlib import Path

RECORDER_OUTPUT = 'recorder.out'  # beside the bag, in the run folder


def recorder_report(output: Path) -> dict | None:
    """The recorder's closing report (its `recorded {...}` line), or None without one."""
    try:
        lines = output.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith('recorded '):
            try:
                return json.loads(line[len('recorded ') :])
            except ValueError:
                return None
    return None


def judge_recording(
    notes: dict,
    report: dict | None,
    complete: bool,
    code: int | None = None,
    published: dict[str, int] | None = None,
) -> dict:
    """`notes` (the summary's) with what became of an episode's bag: its recorder's closing
    `report`, whether it finished in time (`complete`: False when it had to be stopped), its
    process's exit `code` (None: it runs on; a signal's is negative), and, where the graph
    knows them, the messages of the robot's state its worker `published` while the bag was
    open, by topic (/clock has one for the reset and one per tick; a topic the bag does not
    record is passed over)."""
    problems = []
    if code:
        problems.append(f'the recorder ended with {"signal " + str(-code) if code < 0 else code}')
    if report is None:
        problems.append('it did not report closing the bag')
    elif not report.get('ended'):
        problems.append("it did not see the episode's end event")
    # A recorder stopped for being slow, which then closed the bag with the end event in it,
    # left a complete bag: its slowness is said only beside what is missing.
    if problems and not complete:
        problems.append('it did not finish in time')
    if report is not None and report.get('write_errors'):
        problems.append(f'{report["write_errors"]} messages could not be written')
    if report is not None and published:
        counts = report.get('counts') or {}
        short = [
            f'{counts[topic]} of {n} on {topic}'
            for topic, n in published.items()
            if topic in counts and counts[topic] < n
        ]
        if short:
            said = ', '.join(short)
            problems.append(f'it recorded fewer states than the worker published ({said})')
    if problems:
        notes.pop('bag', None)
        notes['bag_incomplete'] = True
        notes['bag_error'] = '; '.join(problems) + ': the bag is incomplete'
    elif report.get('refused') or report.get('malformed_events'):
        notes['bag_refused'] = {
            'messages_from_outside_the_graph': report.get('refused'),
            'malformed_events': report.get('malformed_events'),
        }
    return notes
