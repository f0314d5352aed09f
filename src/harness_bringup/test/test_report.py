"""report.html of a scripted episode, opened in a real headless browser (Debian's Chromium,
installed by tools/browser.sh on first use, or the test skips saying why): the overview, one
timeline entry per model call, the images the model saw decoded, the plots drawn; `harness
report` remakes it; bench.html links the episodes' reports."""

import html
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from harness_bringup.cli import main
from harness_recording.bench_table import RESULT_COLUMNS, bench_tables, cell_text, timing_notes
from harness_recording.run_report import write_bench_page

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / 'config' / 'harness.yaml')


@pytest.fixture(scope='module')
def chromium():
    found = subprocess.run([str(ROOT / 'tools' / 'browser.sh')], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(f'no browser for the report test: {found.stderr.strip()}')
    return found.stdout.strip().splitlines()[-1]


@pytest.fixture(scope='module')
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp('runs')
    assert (
        main(['--config', CONFIG, 'run', 'lift_cube', '--model', 'scripted', '--out', str(out)])
        == 0
    )
    (folder,) = out.iterdir()
    return folder


def dom(chromium: str, page: Path, screenshot: Path | None = None) -> str:
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--virtual-time-budget=5000']
    if screenshot is not None:
        shot = subprocess.run(
            [chromium, *flags, '--window-size=1280,1100', f'--screenshot={screenshot}']
            + [page.as_uri()],
            capture_output=True,
            timeout=120,
        )
        assert shot.returncode == 0, shot.stderr[-2000:]
    done = subprocess.run(
        [chromium, *flags, '--dump-dom', page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_report_renders_in_a_browser(run_folder, chromium, tmp_path):
    page = run_folder / 'report.html'
    assert page.is_file(), 'harness run writes report.html'
    summary = json.loads((run_folder / 'summary.json').read_text())
    events = [json.loads(x) for x in (run_folder / 'events.jsonl').read_text().splitlines()]
    sent = [f for e in events if e['type'] == 'model_request' for f in e['image_files']]
    html = dom(chromium, page, tmp_path / 'report.png')
    body = re.search(r'<body([^>]*)>', html).group(1)
    # The browser decoded every image the model saw and drew the three plots.
    assert f'data-images-loaded="{len(sent)}"' in body, body
    assert 'data-plots-drawn="3"' in body, body
    assert html.count('class="decision"') == summary['model_calls']
    assert 'lift_cube' in html and 'SUCCESS' in html and 'move_eef' in html
    assert 'src="http' not in html and "src='http" not in html  # nothing fetched
    png = (tmp_path / 'report.png').read_bytes()
    assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 20_000


def test_harness_report_remakes_it_and_refuses_a_non_run(run_folder, tmp_path, capsys):
    (run_folder / 'report.html').unlink()
    assert main(['report', str(run_folder)]) == 0
    assert (run_folder / 'report.html').is_file()
    # a crafted folder's report.html that links elsewhere is replaced, not written through
    victim = tmp_path / 'victim.txt'
    victim.write_text('untouched')
    (run_folder / 'report.html').unlink()
    (run_folder / 'report.html').symlink_to(victim)
    assert main(['report', str(run_folder)]) == 0
    assert victim.read_text() == 'untouched'
    assert not (run_folder / 'report.html').is_symlink()
    # a crafted bag's metadata.yaml nested 50000 deep ended the process (rosbags' loader): now
    # the report is made without the bag's plots
    import shutil

    deep = tmp_path / 'deep'
    shutil.copytree(run_folder, deep, symlinks=True)
    nested = 'rosbag2_bagfile_information: ' + '[' * 50000 + ']' * 50000
    (deep / 'bag' / 'metadata.yaml').write_text(nested)
    (deep / 'report.html').unlink()
    assert main(['report', str(deep)]) == 0
    assert 'nested more than 64 levels deep' in (deep / 'report.html').read_text()
    assert main(['report', str(tmp_path)]) == 2
    assert 'has no summary.json: not a run folder' in capsys.readouterr().err


def test_bench_page_links_each_report(run_folder, tmp_path):
    summary = json.loads((run_folder / 'summary.json').read_text())
    tables = bench_tables([summary])
    tables['interrupted'] = {'episodes': 3, 'ran': 1}
    tables['timing']['bags_incomplete'] = [run_folder.name]
    page = write_bench_page(run_folder.parent, tables, [str(run_folder)])
    text = page.read_text()
    assert f'href="{run_folder.name}/report.html"' in text
    assert 'lift_cube' in text
    # What bench.md says, the page says: every result column (the calls' tokens and cost among
    # them), the timing, and the notes.
    for column in RESULT_COLUMNS:
        assert f'<th>{column.replace("_", " ")}</th>' in text, column
    row = tables['overall']
    said = [cell_text(row[c]) for c in RESULT_COLUMNS]
    assert '<tr><th>overall</th>' + ''.join(f'<th>{v}</th>' for v in said) + '</tr>' in text
    assert 'Interrupted: 1 of its 3 episodes ran' in text and 'wall s mean' in text
    (note,) = timing_notes(tables)
    assert f'<p>{note}</p>' in html.unescape(text)


@pytest.mark.parametrize(
    'summary,said',
    [
        ('[1]', 'is not a JSON object'),
        ('{"status": 5, "outcome": "x", "decisions": [1]}', 'is not as an episode writes it'),
    ],
)
def test_a_broken_summary_is_one_line(tmp_path, capsys, summary, said):
    (tmp_path / 'summary.json').write_text(summary)
    assert main(['report', str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
