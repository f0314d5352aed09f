"""The station's passes folder: made for this user alone, removed whole, and removed on a
killed station's note only when the note names a passes folder."""

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from harness_bringup.passes_folder import (
    new_passes_folder,
    note_passes_folder,
    owner_of,
    remove_abandoned_passes_folders,
    remove_noted_passes_folder,
    remove_passes_folder,
)


def test_a_passes_folder_is_this_users_alone_and_removed_whole():
    folder = new_passes_folder()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (folder / 'ab12.json').write_text('{}')
    remove_passes_folder(folder)
    assert not folder.exists()
    remove_passes_folder(folder)  # already gone: nothing to do


def test_a_note_removes_only_a_passes_folder(tmp_path):
    folder = new_passes_folder()
    note_passes_folder(tmp_path, folder)
    remove_noted_passes_folder(tmp_path)
    assert not folder.exists()
    other = Path(tempfile.mkdtemp(prefix='not-passes-'))
    try:
        for named in (other, tmp_path, Path('/')):
            note_passes_folder(tmp_path, named)
            remove_noted_passes_folder(tmp_path)
            assert named.exists()
    finally:
        other.rmdir()
    (tmp_path / 'passes_folder').unlink()
    remove_noted_passes_folder(tmp_path)  # no note: nothing to do


def test_a_folder_is_named_after_its_process_and_outlives_it_only_until_the_next_is_made():
    ended = subprocess.run(
        [sys.executable, '-c', 'import os; print(os.getpid())'],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(ended.stdout)
    running = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    temporary = Path(tempfile.gettempdir())
    abandoned = Path(tempfile.mkdtemp(prefix=f'harness-passes-{dead}-'))
    (abandoned / 'ab12.json').write_text('{}')
    alive = Path(tempfile.mkdtemp(prefix=f'harness-passes-{running.pid}-'))
    unnamed = Path(tempfile.mkdtemp(prefix='harness-passes-'))  # no process in its name
    not_a_folder = temporary / f'harness-passes-{dead}-file'
    not_a_folder.write_text('')
    mine = abandoned
    try:
        assert owner_of(abandoned.name) == dead and owner_of(unnamed.name) is None
        assert owner_of('harness-passes--x') is None and owner_of('other-12-x') is None
        mine = new_passes_folder()
        assert owner_of(mine.name) == os.getpid()
        assert not abandoned.exists()
        assert alive.is_dir() and unnamed.is_dir() and mine.is_dir() and not_a_folder.is_file()
        running.kill()
        running.wait()
        assert alive in remove_abandoned_passes_folders() and not alive.exists()
        assert mine.is_dir()  # this process's own
    finally:
        running.kill()
        running.wait()
        for path in (alive, unnamed, mine):
            remove_passes_folder(path)
        not_a_folder.unlink()
