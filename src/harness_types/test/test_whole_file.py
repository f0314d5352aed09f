"""harness_types.whole_file: a file written whole, beside and renamed over."""

from pathlib import Path

import pytest
from harness_types.whole_file import write_whole


def test_a_file_is_replaced_whole_and_a_link_at_its_name_is_not_followed(tmp_path):
    path = tmp_path / 'summary.json'
    write_whole(path, b'first')
    write_whole(path, b'second')
    assert path.read_bytes() == b'second'
    victim = tmp_path / 'victim.txt'
    victim.write_text('untouched')
    path.unlink()
    path.symlink_to(victim)
    write_whole(path, b'third')
    assert victim.read_text() == 'untouched'
    assert not path.is_symlink() and path.read_bytes() == b'third'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['summary.json', 'victim.txt']


def test_a_full_disk_leaves_the_old_file_and_no_part_file(tmp_path, monkeypatch):
    """The buffer goes to disk when the file closes: a full disk said so there, after the
    part file's clean-up, which left `.summary.json.<pid>.<hex>` beside the summary."""
    import errno
    import io

    import harness_types.whole_file as whole_file

    path = tmp_path / 'summary.json'
    write_whole(path, b'first')

    class Full(io.FileIO):
        def close(self):
            super().close()
            raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(whole_file, 'open', lambda name, mode: Full(name, 'x'), raising=False)
    try:
        write_whole(path, b'second')
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    else:
        raise AssertionError('a full disk was not said')
    assert path.read_bytes() == b'first'
    assert [p.name for p in tmp_path.iterdir()] == ['summary.json']


def test_a_folder_where_the_file_goes_is_named_not_the_part_file(tmp_path):
    (tmp_path / 'report.html').mkdir()
    with pytest.raises(IsADirectoryError) as exc:
        write_whole(tmp_path / 'report.html', b'x')
    assert str(tmp_path / 'report.html') in str(exc.value) and '.report.html.' not in str(exc.value)
    assert [p.name for p in tmp_path.iterdir()] == ['report.html']  # (no part file left)


def test_a_fifo_where_the_file_goes_is_left_as_it_is(tmp_path):
    # (a device there, /dev/null as root, became a plain file)
    import os

    os.mkfifo(tmp_path / 'plan.json')
    with pytest.raises(OSError, match='a device, FIFO or socket is there, not a file'):
        write_whole(tmp_path / 'plan.json', b'x')
    assert (tmp_path / 'plan.json').is_fifo()
    assert [p.name for p in tmp_path.iterdir()] == ['plan.json']


def test_read_text_takes_regular_files_alone_and_bounded(tmp_path):
    # (a FIFO named as a price table, a prompt, a catalogue or a plan blocked its reader, and
    # /dev/zero filled the memory)
    import os

    from harness_types.whole_file import read_text

    (tmp_path / 'ok.yaml').write_text('a: 1\n')
    assert read_text(tmp_path / 'ok.yaml') == 'a: 1\n'
    os.mkfifo(tmp_path / 'fifo')
    for path in (tmp_path / 'fifo', Path('/dev/zero')):
        with pytest.raises(OSError, match='not a regular file'):
            read_text(path)
    with pytest.raises(IsADirectoryError):
        read_text(tmp_path)
    (tmp_path / 'big').write_bytes(b'x' * 101)
    with pytest.raises(OSError, match='larger than 100 bytes'):
        read_text(tmp_path / 'big', most=100)
