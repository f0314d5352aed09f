"""The program's folder: noted in the run folder, its files moved into workspace/ by whoever
closes the run (the episode, or the supervisor of a killed one), and only ever a program
folder of the temporary directory removed."""

import tempfile
from pathlib import Path

from harness_bringup.program_workspace import (
    NOT_COLLECTED,
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


def test_onto_another_filesystem_holes_stay_holes_and_links_links(tmp_path, monkeypatch):
    """A sparse file copied with shutil.move onto another filesystem had its holes written
    out: a program's 504 MB of holes became 504 MB of zeros in the run folder (126 GB would
    have filled the disk). Across filesystems (os.rename refusing, as it does there) its data
    is copied and its holes left; a link stays a link; a FIFO is left behind."""
    import errno
    import os

    import harness_bringup.program_workspace as program_workspace

    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    with open(program / 'sparse.bin', 'wb') as f:
        f.truncate(64 << 20)
        f.seek(1 << 20)
        f.write(b'data' * 1024)
    (program / 'sub').mkdir()
    (program / 'sub' / 'plain.txt').write_text('kept')
    (program / 'link').symlink_to('sub/plain.txt')
    os.mkfifo(program / 'pipe')

    def across(source, to):
        raise OSError(errno.EXDEV, 'Invalid cross-device link')

    monkeypatch.setattr(program_workspace.os, 'rename', across)
    collect_program_workspace(workspace)
    copied = (workspace / 'sparse.bin').stat()
    assert copied.st_size == 64 << 20
    assert copied.st_blocks * 512 < 4 << 20, copied.st_blocks  # the data's blocks, not 256 MB
    with open(workspace / 'sparse.bin', 'rb') as f:
        f.seek(1 << 20)
        assert f.read(4096) == b'data' * 1024
        assert f.read(4096) == bytes(4096)
    assert (workspace / 'sub' / 'plain.txt').read_text() == 'kept'
    assert os.readlink(workspace / 'link') == 'sub/plain.txt'
    assert not (workspace / 'pipe').exists()
    assert not program.exists()


def test_onto_another_filesystem_deep_folders_and_links_left_at_the_target(tmp_path, monkeypatch):
    """A program's folders nested 1100 deep (a recursive copy raised RecursionError, which no
    caller caught, and lost the summary); a second pass after an interrupted one finds a link
    where a folder goes (a copy that followed it wrote outside the run folder): replaced, the
    outside untouched. A setuid bit is not copied."""

    import harness_bringup.program_workspace as program_workspace

    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    deep = program / 'deep'
    deep.mkdir()
    for _ in range(1100):  # (os.makedirs recurses as deep)
        deep = deep / 'd'
        deep.mkdir()
    try:
        moved_deep_and_no_link_followed(program, workspace, deep, tmp_path, monkeypatch)
    finally:  # (pytest's own clean-up of old temporary folders recurses)
        program_workspace.remove_tree(workspace / 'deep')
        program_workspace.remove_tree(program)


def moved_deep_and_no_link_followed(program, workspace, deep, tmp_path, monkeypatch):
    import errno
    import os
    import stat

    import harness_bringup.program_workspace as program_workspace

    (deep / 'bottom.txt').write_text('down here')
    (program / 'sub').mkdir()
    (program / 'sub' / 'kept.txt').write_text('kept')
    os.chmod(program / 'sub' / 'kept.txt', 0o4755)
    outside = tmp_path / 'outside'
    outside.mkdir()
    workspace.mkdir(parents=True)
    (workspace / 'sub').symlink_to(outside)  # what an earlier pass left

    def across(source, to):
        raise OSError(errno.EXDEV, 'Invalid cross-device link')

    monkeypatch.setattr(program_workspace.os, 'rename', across)
    collect_program_workspace(workspace)
    # copied to COPY_DEPTH folders down (walked by descriptor: the paths pass PATH_MAX's 4096
    # bytes at ~2000 levels), what lies deeper named as not collected
    reached = workspace / 'deep' / '/'.join(['d'] * (program_workspace.COPY_DEPTH - 1))
    assert reached.is_dir() and not (workspace / 'deep' / '/'.join(['d'] * 1100)).exists()
    said = (workspace.parent / program_workspace.NOT_COLLECTED).read_text()
    assert f'nested deeper than {program_workspace.COPY_DEPTH} folders' in said
    assert not (workspace / 'sub').is_symlink()
    assert (workspace / 'sub' / 'kept.txt').read_text() == 'kept'
    assert list(outside.iterdir()) == []
    assert stat.S_IMODE((workspace / 'sub' / 'kept.txt').stat().st_mode) == 0o755


def test_what_was_not_collected_is_named_beside_the_workspace_never_through_a_link(
    tmp_path, monkeypatch
):
    """The note of what was not moved had been written into workspace/ by its name: a program's
    link of that name made the harness write through it, anywhere root can. It is written
    beside workspace/ now, names escaped (one that is not UTF-8 had stopped the collection);
    a file past the quota is not copied, and the program folder always goes."""
    import errno
    import os

    import harness_bringup.program_workspace as program_workspace

    victim = tmp_path / 'victim'
    victim.write_text('untouched')
    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    os.symlink(victim, program / NOT_COLLECTED)
    (program / os.fsdecode(b'bad\xff')).write_bytes(b'x' * 90000)  # past the budget below
    (program / 'small').write_bytes(b'y' * 100)

    def across(source, to):
        raise OSError(errno.EXDEV, 'Invalid cross-device link')

    monkeypatch.setattr(program_workspace.os, 'rename', across)
    # (the small file and the link, a block each where the link's target is long)
    fits = sum(program_workspace._bytes_of(program / n) for n in ('small', NOT_COLLECTED))
    collect_program_workspace(workspace, copy_budget=fits)
    assert victim.read_text() == 'untouched'
    said = (workspace.parent / program_workspace.NOT_COLLECTED).read_text()
    assert "'bad\\udcff': past the workspace quota" in said, said
    assert (workspace / 'small').read_bytes() == b'y' * 100
    assert (workspace / 'workspace_not_collected.txt').is_symlink()  # the program's, as it was
    assert not program.exists()


def test_on_one_filesystem_the_run_folder_keeps_no_more_than_the_quota(tmp_path):
    """The quota is measured while cells run, so a cell may overshoot it (and each later cell
    again); renamed whole, a program's overshoot had all landed in the run folder. What fits
    the budget is renamed (a folder past it is entered), the rest is named and removed."""
    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    (program / 'a_small.txt').write_bytes(b'a' * 1000)
    (program / 'b_big.bin').write_bytes(b'b' * 90000)
    (program / 'c_folder').mkdir()
    (program / 'c_folder' / 'fits.txt').write_bytes(b'c' * 3000)
    (program / 'c_folder' / 'past.bin').write_bytes(b'd' * 60000)
    (program / 'd_sparse').write_bytes(b'')
    with open(program / 'd_sparse', 'r+b') as f:  # no blocks, its size counted
        f.truncate(50_000)
    from harness_bringup.program_workspace import _bytes_of

    fits = _bytes_of(program / 'a_small.txt') + _bytes_of(program / 'c_folder' / 'fits.txt')
    collect_program_workspace(workspace, copy_budget=fits + 100)
    assert (workspace / 'a_small.txt').read_bytes() == b'a' * 1000
    assert (workspace / 'c_folder' / 'fits.txt').read_bytes() == b'c' * 3000
    for name in ('b_big.bin', 'c_folder/past.bin', 'd_sparse'):
        assert not (workspace / name).exists(), name
    said = (workspace.parent / NOT_COLLECTED).read_text()
    assert "'b_big.bin': past the workspace quota" in said, said
    assert "'past.bin': past the workspace quota" in said and "'d_sparse'" in said, said
    assert not program.exists()


def test_a_tree_that_cannot_be_measured_whole_is_not_renamed_whole(tmp_path):
    """A folder nested past COPY_DEPTH was measured as what lay above it, and the 5 MB below
    moved in with it: what cannot be measured cannot fit. It is copied within the budget,
    what lies deeper named."""
    from harness_bringup.program_workspace import COPY_DEPTH

    workspace = tmp_path / 'run' / 'workspace'
    program = new_program_workspace(workspace)
    deep = program / 'deep' / '/'.join(['d'] * (COPY_DEPTH + 10))
    deep.mkdir(parents=True)
    (deep / 'bottom.bin').write_bytes(b'x' * 5_000_000)
    collect_program_workspace(workspace, copy_budget=2_000_000)
    assert not list(workspace.rglob('bottom.bin'))
    said = (workspace.parent / NOT_COLLECTED).read_text()
    assert f'nested deeper than {COPY_DEPTH} folders' in said, said
    assert not program.exists()
