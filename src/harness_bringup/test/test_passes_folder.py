"""The station's passes folder: made for this user alone, removed whole, and removed on a
killed station's note only when the note names a passes folder."""

import stat
import tempfile
from pathlib import Path

from harness_bringup.passes_folder import (
    new_passes_folder,
    note_passes_folder,
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
