"""The station's passes folder: made for this user alone, removed whole, removed on a killed
station's note only when the note names a passes folder, and removed by the next one made once
the process that made it is gone, whatever shares the temporary directory."""

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from harness_bringup.passes_folder import (
    OWNER,
    new_passes_folder,
    note_passes_folder,
    remove_abandoned_passes_folders,
    remove_noted_passes_folder,
    remove_passes_folder,
)


@pytest.fixture
def temporary(tmp_path, monkeypatch):
    """The temporary directory, for this process and the ones it starts: the sweep never sees
    the machine's own."""
    folder = tmp_path / 'tmp'
    folder.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(folder))
    monkeypatch.setenv('TMPDIR', str(folder))
    return folder


def test_a_passes_folder_is_this_users_alone_and_removed_whole(temporary):
    folder = new_passes_folder()
    assert folder.path.parent == temporary
    assert stat.S_IMODE(folder.path.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.path.iterdir()) == [OWNER]
    (folder.path / 'ab12.json').write_text('{}')
    folder.remove()
    assert not folder.path.exists()
    folder.remove()  # already gone: nothing to do


def test_a_note_removes_only_a_passes_folder(temporary, tmp_path):
    station = tmp_path / 'station'
    station.mkdir()
    folder = new_passes_folder()
    note_passes_folder(station, folder.path)
    remove_noted_passes_folder(station)
    assert not folder.path.exists()
    folder.remove()
    other = Path(tempfile.mkdtemp(prefix='not-passes-'))
    for named in (other, station, Path('/')):
        note_passes_folder(station, named)
        remove_noted_passes_folder(station)
        assert named.exists()
    (station / 'passes_folder').unlink()
    remove_noted_passes_folder(station)  # no note: nothing to do


MAKE = (
    'import sys\n'
    'from harness_bringup.passes_folder import new_passes_folder\n'
    'print(new_passes_folder().path, flush=True)\n'
    'sys.stdin.read()\n'  # holds its folder until its input ends
)


def test_a_folder_outlives_the_process_that_made_it_only_until_the_next_is_made(temporary):
    def made_by_a_process() -> tuple[subprocess.Popen, Path]:
        process = subprocess.Popen(
            [sys.executable, '-c', MAKE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        return process, Path(process.stdout.readline().strip())

    running, alive = made_by_a_process()
    killed, abandoned = made_by_a_process()
    (abandoned / 'ab12.json').write_text('{}')
    killed.kill()  # leaves its folder behind
    killed.wait()
    unowned = Path(tempfile.mkdtemp(prefix='harness-passes-'))  # made before folders had an owner
    target = Path(tempfile.mkdtemp(prefix='kept-'))
    (target / OWNER).write_text('')  # unlocked, behind a link named as a passes folder
    link = temporary / 'harness-passes-link'
    link.symlink_to(target)
    try:
        assert abandoned.is_dir() and alive.is_dir()
        mine = new_passes_folder()
        assert not abandoned.exists()
        assert alive.is_dir() and unowned.is_dir() and link.is_symlink() and target.is_dir()
        assert remove_abandoned_passes_folders() == []  # mine is held too
        running.stdin.close()  # its maker ends without removing it
        running.wait()
        assert remove_abandoned_passes_folders() == [alive] and not alive.exists()
        assert mine.path.is_dir() and (target / OWNER).is_file()
        mine.remove()
    finally:
        running.kill()
        running.wait()
        remove_passes_folder(alive)


def test_the_folders_this_process_holds_are_never_taken_for_abandoned(temporary):
    held = [new_passes_folder() for _ in range(20)]
    try:
        assert remove_abandoned_passes_folders() == []
        assert all(h.path.is_dir() for h in held)
    finally:
        for h in held:
            h.remove()
    assert os.listdir(temporary) == []
