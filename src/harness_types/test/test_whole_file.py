"""harness_types.whole_file: a file written whole, beside and renamed over."""

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
