"""report.html of a run folder: one self-contained page (no network fetches: images inline,
plots as inline SVG) a person reads to understand an episode, and bench.html linking a
bench's episodes. Pure: the run folder's files and its bag (rosbags), no ROS.

- The top: task, model, status, outcome, calls by reason, tokens, cost, wall time by phase.
- A timeline of decision points: the reason, the request's size, the reply (the thought and
  the code), the cell's status, output and the executions with their events, and the images
  the model saw (with the located objects outlined).
- Plots over ticks of each arm's joints and grippers, with the executions, their events and
  the shield's rejections marked (from the bag).
- The wrap-up and the outcome.
"""

from __future__ import annotations

import base64
import contextlib
import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_bench.layout import layout_name
from harness_types.execution import NOMINAL, ended_in_success
from harness_types.reply import ALL_BLOCKS, FormatError, parse_reply, requests_in_place
from harness_types.whole_file import write_whole
from jinja2 import (
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    TemplateError,
    select_autoescape,
)

from arx_x5_description.urdf import user_cache_dir
from harness_recording.bench_table import (
    RESULT_COLUMNS,
    cell_text,
    interrupted_note,
    kept_from_starting_note,
    listed_episodes,
    timing_notes,
)
from harness_recording.run_folder import file_inside, read_events
from harness_recording.svg_plot import Mark, Plot

if TYPE_CHECKING:
    from harness_recording.bag import OpenedBag

REPORT = 'report.html'
LABEL_MIN_TICKS = 15  # executions this long get their skill's name in the joint plots
ORANGE, RED = '#ff7f0e', '#d62728'  # an event other than COMPLETED; a shield rejection


class ReportError(ValueError):
    """The folder is not a run folder; the message says why."""


@dataclass
class Series:
    """What the bag says over ticks: joint positions by arm (ticks x 6), gripper openings (m,
    the finger joint), each execution's span and event, the shield's rejections."""

    ticks: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joints: dict[str, np.ndarray] = field(default_factory=dict)
    grippers: dict[str, np.ndarray] = field(default_factory=dict)
    executions: list[dict] = field(default_factory=list)
    rejections: list[dict] = field(default_factory=list)
    note: str = ''  # why there is nothing to plot, or what the plots lack


@dataclass
class Decision:
    """One decision point: the model request, its reply and the cell it ran (if any)."""

    call: int
    reason: str
    request: dict
    thought: str
    block: str
    body: str
    images: list[tuple[str, str]]  # (file name, data URI)
    cell: dict | None = None


class _TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept between processes: compiling report.html.j2 took ~0.7 s of
    every episode. Keyed by the template's source (an edited template compiles again) in a
    folder named by jinja's version and the environment's options; a cache file that cannot be
    read or written is skipped."""

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged file: compile anew
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


_OPTIONS = {'trim_blocks': True, 'lstrip_blocks': True}  # with autoescape for html and j2


def _template_cache() -> _TemplateCache | None:
    import hashlib

    import jinja2

    key = hashlib.sha256(repr((jinja2.__version__, sorted(_OPTIONS.items()))).encode())
    try:
        folder = user_cache_dir() / f'templates-{key.hexdigest()[:12]}'
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # no home folder, or none writable: no cache
        return None
    return _TemplateCache(str(folder))


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader('harness_recording', 'templates'),
        autoescape=select_autoescape(['html', 'j2']),
        bytecode_cache=_template_cache(),
        **_OPTIONS,
    )


def _data_uri(path: Path) -> str:
    return 'data:image/png;base64,' + base64.b64encode(path.read_bytes()).decode()


def read_series(
    bag: Path,
    control_hz: float = 25.0,
    gripper_joint: str = 'gripper',
    opened: OpenedBag | None = None,
) -> Series:
    """The plotted series from a run's bag (an empty Series with a note when there is none).
    `gripper_joint`: the embodiment's finger joint name, without the arm's prefix; `opened`:
    the bag, opened once for whoever reads it (harness_recording.bag.OpenedBag)."""
    from harness_recording.bag import CountedMessages, bag_reader, typestore, unclosed_note

    if not (bag / 'metadata.yaml').is_file():
        return Series(note=unclosed_note(bag))

    store = typestore()
    times, rows, names = [], [], None
    executions, rejections = [], []
    try:
        with contextlib.ExitStack() as stack:
            reader = bag_reader(bag, opened, stack)
            # Only the plotted topics: the camera frames are most of the bag's bytes.
            wanted = [
                c
                for c in reader.connections
                if c.topic.endswith(('/joint_states', '/skills/executions', '/shield_rejections'))
            ]
            messages = CountedMessages(reader, wanted)
            for c, _, raw in messages:
                if c.topic.endswith('/joint_states'):
                    msg = store.deserialize_cdr(raw, c.msgtype)
                    names = names or list(msg.name)
                    if list(msg.name) != names:
                        continue
                    times.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
                    rows.append(np.asarray(msg.position, dtype=float))
                elif c.topic.endswith('/skills/executions'):
                    record = json.loads(store.deserialize_cdr(raw, c.msgtype).data)
                    if record.get('phase') == 'end':
                        executions.append(record)
                elif c.topic.endswith('/shield_rejections'):
                    msg = store.deserialize_cdr(raw, c.msgtype)
                    rejections.append({'step': int(msg.step), 'reasons': list(msg.reasons)})
            damaged = messages.shortfall()
    except Exception as exc:  # a damaged bag still gets a report, without plots
        return Series(note=f'the bag cannot be read: {exc}')
    if not rows:
        return Series(note=damaged or 'the bag holds no joint states')
    positions = np.vstack(rows)
    series = Series(
        ticks=np.round(np.asarray(times) * control_hz),
        executions=executions,
        rejections=rejections,
        note=damaged,
    )
    for arm in ('left', 'right'):
        index = [names.index(f'{arm}_joint{j}') for j in range(1, 7) if f'{arm}_joint{j}' in names]
        series.joints[arm] = positions[:, index]
        finger = f'{arm}_{gripper_joint}'
        if finger in names:
            series.grippers[arm] = positions[:, names.index(finger)]
    return series


def plots(series: Series) -> list[tuple[str, str]]:
    """(title, inline SVG) of each arm's joints and of the grippers, over ticks."""
    if series.ticks.size == 0:
        return []
    out = []
    panels = [(f'{arm} arm joints (rad)', series.joints[arm], arm) for arm in series.joints]
    every = np.concatenate([v.ravel() for v in series.joints.values()] or [np.zeros(1)])
    low, high = float(every.min()), float(every.max())
    middle, half = (low + high) / 2, max((high - low) / 2, 0.5) * 1.1
    joint_limits = (middle - half, middle + half)
    if series.grippers:
        stacked = np.column_stack([series.grippers[a] * 1000 for a in series.grippers])
        panels.append(('gripper openings (finger joint, mm)', stacked, ''))
    for title, values, arm in panels:  # arm '' = the grippers' panel (every execution)
        labels = [f'j{k + 1}' for k in range(values.shape[1])] if arm else list(series.grippers)
        plot = Plot(
            title,
            series.ticks,
            [(labels[k], values[:, k]) for k in range(values.shape[1])],
            # one scale for both arms; an arm at rest is a flat line
            ylim=joint_limits if arm else None,
        )
        mine = [e for e in series.executions if not arm or e.get('arm') in (arm, '', 'both')]
        for n, e in enumerate(mine):
            start, end = e.get('start_step', 0), e.get('end_step', 0)
            plot.spans.append((start, end, '#ebebeb' if n % 2 else '#d9d9d9'))
            if e.get('event') not in NOMINAL and not ended_in_success(
                str(e.get('event', '')), str(e.get('detail', ''))
            ):
                plot.marks.append(Mark(end, ORANGE, e.get('event', ''), dashed=True))
            if end - start >= LABEL_MIN_TICKS and arm:
                plot.notes.append(((start + end) / 2, e.get('skill', '')))
        plot.marks += [Mark(r['step'], RED) for r in series.rejections]
        out.append((title, plot.svg()))
    return out


def _decisions(folder: Path, events: list[dict]) -> tuple[list[Decision], dict | None]:
    decisions: list[Decision] = []
    wrap_up = None
    for e in requests_in_place(events):
        if e.get('type') == 'model_request':
            reply = str(e.get('reply', ''))
            if e.get('answered') is False:  # interrupted, or the service failed
                thought, block, body = '', 'not answered', str(e.get('why', ''))
            else:
                try:
                    parsed = parse_reply(reply, ALL_BLOCKS)
                    thought, block, body = parsed.thought, parsed.kind, parsed.body
                except FormatError as error:
                    thought, block, body = reply, 'format error', str(error)
            images = []
            for name in e.get('image_files') or []:
                path = file_inside(folder, name)
                if path is not None:
                    images.append((str(name), _data_uri(path)))
            decisions.append(
                Decision(
                    int(e.get('call', 0)),
                    str(e.get('reason', '')),
                    e,
                    thought,
                    block,
                    body,
                    images,
                )
            )
        elif e.get('type') in CUT_CELLS:  # no result came: what is known, as a cell
            why = CUT_CELLS[e['type']] + (f' ({e["why"]})' if e.get('why') else '')
            cut = {'status': 'interrupted' if e['type'] == 'cell_interrupted' else 'error'}
            if decisions:
                decisions[-1].cell = cut | {'traceback': why}
        elif e.get('type') == 'cell':
            if not decisions:  # a cell no model asked for: `harness program`'s file
                code = str(e.get('code', ''))
                decisions.append(
                    Decision(int(e.get('call', 1)), 'program file', {}, '', '', code, [])
                )
            decisions[-1].cell = e
        elif e.get('type') == 'wrap_up':
            wrap_up = e
    return decisions, wrap_up


# events.jsonl's records of a cell whose result never came, and what the report says of one
CUT_CELLS = {
    'cell_interrupted': 'a Ctrl-C cut this cell as it ran: what it moved is in the bag',
    'cell_lost': "the kernel's result of this cell never came: what it moved is in the bag",
}


def events_note(folder: Path, events: list[dict]) -> str:
    """What the report cannot show of <folder>/events.jsonl ('' when it read every line): a
    file that is missing or not a file, lines cut short or not JSON (read_events leaves them
    out)."""
    path = Path(folder) / 'events.jsonl'
    if not path.is_file():
        return 'events.jsonl is missing or not a file: the decision points cannot be shown'
    try:
        lines = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    except OSError as exc:
        return f'events.jsonl cannot be read ({exc.strerror}): the decision points are not shown'
    if lines > len(events):
        return (
            f'{lines - len(events)} of the {lines} lines of events.jsonl are not events (cut short '
            'or not JSON) and are left out: the decision points may be incomplete'
        )
    return ''


def render(folder: Path, opened: OpenedBag | None = None) -> str:
    """The report of a run folder as one HTML page (`opened`: its bag, as read_series takes
    it)."""
    folder = Path(folder)
    summary_path = folder / 'summary.json'
    if not summary_path.is_file():
        raise ReportError(f'{folder} has no summary.json: not a run folder')
    try:
        summary = json.loads(summary_path.read_text())
    except (ValueError, RecursionError) as exc:  # (RecursionError: nested past the parser)
        raise ReportError(f'{summary_path} is not JSON: {type(exc).__name__}: {exc}') from None
    if not isinstance(summary, dict):
        raise ReportError(f'{summary_path} is not a JSON object')
    try:
        events = read_events(folder)
        decisions, wrap_up = _decisions(folder, events)
        gripper = load_embodiment().gripper.joint
        series = read_series(folder / 'bag', gripper_joint=gripper, opened=opened)
        environment = _environment()
        end = next((e for e in reversed(events) if e.get('type') == 'end'), {})
        return environment.get_template('report.html.j2').render(
            folder=folder.name,
            summary=summary,
            decisions=decisions,
            wrap_up=wrap_up,
            end=end,
            plots=plots(series),
            series=series,
            events_note=events_note(folder, events),
            nominal=NOMINAL,
            ended_in_success=ended_in_success,
        )
    except (TypeError, AttributeError, KeyError, ValueError, TemplateError) as exc:
        # A run folder's files edited or broken by hand: said, not a traceback. Where it was
        # raised is said too, so that a bug of the report's own reads as one.
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise ReportError(
            f'{folder}: a file of the run folder is not as an episode writes it '
            f'({type(exc).__name__}: {exc}; raised at {Path(where.filename).name}:{where.lineno})'
        ) from None


def write_report(folder: Path, opened: OpenedBag | None = None) -> Path:
    path = Path(folder) / REPORT
    # A reply may hold a lone surrogate (json keeps it as \\ud800): written as '?', not a
    # UnicodeEncodeError after the file was opened (a 0-byte report.html).
    # (renamed over: a crafted run folder's report.html that links elsewhere is replaced)
    write_whole(path, render(folder, opened).encode('utf-8', 'replace'))
    return path


def write_bench_page(out: Path, tables: dict, run_folders: list[str | None]) -> Path:
    """bench.html: the bench's tables, each episode (in the order of tables['episodes'], with
    its run folder in `run_folders`) linked to its report.html."""
    environment = _environment()
    rows = []
    listed, left_out = listed_episodes(tables)
    shown = {id(e) for e in listed}
    for e, run_folder in zip(tables.get('episodes', []), run_folders, strict=True):
        if id(e) not in shown:
            continue
        folder = Path(run_folder) if run_folder else None
        link = None
        if folder is not None and (folder / REPORT).is_file():
            try:
                link = str((folder / REPORT).relative_to(out))
            except ValueError:
                link = (folder / REPORT).as_uri()
        rows.append({**e, 'link': link})
    environment.filters.update(cell=cell_text, layout=layout_name)
    page = environment.get_template('bench.html.j2').render(
        tables=tables,
        rows=rows,
        columns=RESULT_COLUMNS,
        interrupted=interrupted_note(tables),
        left_out=kept_from_starting_note(left_out),
        notes=timing_notes(tables),
    )
    path = Path(out) / 'bench.html'
    write_whole(path, page.encode('utf-8', 'replace'))
    return path
