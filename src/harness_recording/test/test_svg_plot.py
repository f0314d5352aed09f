"""The report's plots: well-formed SVG with a line per series, the spans, marks and labels, at
the right places."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from harness_recording.run_report import Series, plots
from harness_recording.svg_plot import LEFT, TOP, WIDTH, Mark, Plot, _ticks

NS = {'s': 'http://www.w3.org/2000/svg'}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_a_line_per_series_inside_the_axes():
    x = np.arange(100)
    plot = Plot('joints <rad>', x, [('j1', np.sin(x / 10)), ('j2', np.cos(x / 10))])
    root = parse(plot.svg())
    lines = root.findall('s:polyline', NS)
    assert len(lines) == 2
    for line in lines:
        points = [tuple(map(float, p.split(','))) for p in line.get('points').split()]
        assert len(points) == 100
        xs, ys = zip(*points, strict=True)
        assert min(xs) == pytest.approx(LEFT) and max(xs) <= WIDTH
        assert min(ys) >= TOP
    texts = [t.text for t in root.iter('{http://www.w3.org/2000/svg}text')]
    assert 'joints <rad>' in texts and 'j1' in texts and 'j2' in texts  # escaped, and read back


def test_spans_marks_and_notes_are_drawn_where_they_belong():
    x = np.arange(0, 201)
    plot = Plot('p', x, [('a', x * 0.0)], ylim=(-1, 1))
    plot.spans.append((50, 100, '#ddd'))
    plot.marks.append(Mark(150, '#d62728', 'SHIELD_REJECTED', dashed=True))
    plot.notes.append((75, 'move_eef'))
    root = parse(plot.svg())
    span = next(r for r in root.findall('s:rect', NS) if r.get('fill') == '#ddd')
    width = WIDTH - LEFT - 16
    assert float(span.get('x')) == pytest.approx(LEFT + width / 4, abs=0.1)
    assert float(span.get('width')) == pytest.approx(width / 4, abs=0.1)
    mark = next(line for line in root.findall('s:line', NS) if line.get('stroke') == '#d62728')
    assert float(mark.get('x1')) == pytest.approx(LEFT + width * 0.75, abs=0.1)
    assert mark.get('stroke-dasharray')
    texts = [t.text for t in root.iter('{http://www.w3.org/2000/svg}text')]
    assert 'SHIELD_REJECTED' in texts and 'move_eef' in texts


def test_ticks_are_round_and_cover_the_range():
    assert _ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert _ticks(-0.55, 0.55) == [-0.4, -0.2, 0.0, 0.2, 0.4]
    assert _ticks(3, 3) == [3]
    assert all(0.13 <= t <= 0.87 for t in _ticks(0.13, 0.87))


def test_the_report_plots_of_a_series():
    ticks = np.arange(50.0)
    series = Series(
        ticks=ticks,
        joints={'left': np.zeros((50, 6)), 'right': np.ones((50, 6))},
        grippers={'left': np.full(50, 0.04), 'right': np.full(50, 0.02)},
        executions=[
            {'arm': 'left', 'start_step': 0, 'end_step': 30, 'event': 'COMPLETED', 'skill': 'pick'},
            {'arm': 'left', 'start_step': 30, 'end_step': 40, 'event': 'BLOCKED', 'skill': 'x'},
        ],
        rejections=[{'step': 45, 'reasons': ['joint limit']}],
    )
    out = plots(series)
    assert [title for title, _ in out] == [
        'left arm joints (rad)',
        'right arm joints (rad)',
        'gripper openings (finger joint, mm)',
    ]
    left = parse(out[0][1])
    assert len(left.findall('s:polyline', NS)) == 6
    texts = [t.text for t in left.iter('{http://www.w3.org/2000/svg}text')]
    assert 'BLOCKED' in texts and 'pick' in texts and 'x' not in texts  # short: no label
    assert plots(Series()) == []


def test_nan_and_inf_are_left_out_not_written():
    x = np.arange(10.0)
    values = np.array([0, 1, np.nan, 3, np.inf, 5, 6, -np.inf, 8, 9], dtype=float)
    svg = Plot('p', x, [('a', values), ('b', np.full(10, np.nan))]).svg()
    assert 'nan' not in svg and 'inf' not in svg
    first, second = parse(svg).findall('s:polyline', NS)
    assert len(first.get('points').split()) == 7 and second.get('points') == ''
