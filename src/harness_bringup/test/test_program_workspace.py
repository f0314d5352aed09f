"""The program's folder: noted in the run folder, its files moved into workspace/ by whoever
closes the run (the episode, or the supervisor of a killed one), and only ever a program
folder of the temporary directory removed."""

import tempfile
from pathlib import Path

from harness_bringup.program_workspace import (
    NOTE,
    PREFIX,
    collect_program_workspace,
    new_program_workspace,
)


def test_the_files_move_in_and_nothing_is_left(tmp_path):
    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    assert program.parent.resolve() == Path(tempfile.gettempdir()).resolve()
    assert program.name.startswith(PREFIX) and 'run' not in program.name
    assert (workspace.parent / NOTE).read_text().strip() == str(program)
    (program / 'notes.txt').write_text('kept')
    (program / 'sub').mkdir()
    (program / 'sub' / 'a.npy').write_bytes(b'\0')
    collect_program_workspace(workspace)
    assert (workspace / 'notes.txt').read_text() == 'kept'
    assert (workspace / 'sub' / 'a.npy').is_file()
    assert not program.exists() and not (workspace.parent / NOTE).exists()
    collect_program_workspace(workspace)  # again: nothing to do
    assert (workspace / 'notes.txt').is_file()


def test_without_a_note_nothing_happens(tmp_path):
    collect_program_workspace(tmp_path / 'workspace')
    assert list(tmp_path.iterdir()) == []


def test_a_note_naming_anything_else_is_dropped_and_the_path_left_alone(tmp_path):
    elsewhere = tmp_path / f'{PREFIX}not_in_the_temporary_directory'
    elsewhere.mkdir()
    (elsewhere / 'f').write_text('x')
    run = tmp_path / 'run'
    run.mkdir()
    for named in (elsewhere, Path(tempfile.gettempdir()) / 'someone_else'):
        (run / NOTE).write_text(str(named))
        collect_program_workspace(run / 'workspace')
        assert not (run / NOTE).exists() and not (run / 'workspace').exists()
    assert (elsewhere / 'f').read_text() == 'x'


def test_a_symlink_in_place_of_the_folder_is_not_followed(tmp_path):
    target = tmp_path / 'target'
    target.mkdir()
    (target / 'f').write_text('x')
    link = Path(tempfile.mkdtemp(prefix=PREFIX))
    link.rmdir()
    link.symlink_to(target)
    try:
        run = tmp_path / 'run'
        run.mkdir()
        (run / NOTE).write_text(str(link))
        collect_program_workspace(run / 'workspace')
        assert (target / 'f').read_text() == 'x' and not (run / 'workspace').exists()
    finally:
        link.unlink()
