"""A folder tree walked by descriptor: past PATH_MAX, without following links, to a depth."""

import os
import stat

from harness_types.folder_walk import remove_tree, walk


def nested(root, levels: int, name: str = 'd' * 40):
    """`levels` folders, each in the last (by descriptor: the path passes PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open('bottom', os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), 'wb') as f:
            f.write(b'x' * 1000)
    finally:
        os.close(fd)


def test_a_tree_past_path_max_is_walked_whole_and_removed(tmp_path):
    (tmp_path / 'tree').mkdir()
    nested(tmp_path / 'tree', 150)  # 150 x 41 bytes: 6150, past PATH_MAX's 4096
    steps = [s for s in walk(tmp_path / 'tree', 1000) if s.info is not None]
    assert len(steps) == 151 and max(s.depth for s in steps) == 151
    assert any(s.name == 'bottom' and stat.S_ISREG(s.info.st_mode) for s in steps)
    remove_tree(tmp_path / 'tree')
    assert not (tmp_path / 'tree').exists()


def test_a_walk_enters_no_link_and_no_folder_past_its_depth(tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret').write_text('x')
    root = tmp_path / 'root'
    root.mkdir()
    (root / 'link').symlink_to(outside)
    nested(root, 5, 'n')
    names = [(s.name, s.depth) for s in walk(root, 3) if s.info is not None]
    assert ('link', 1) in names and 'secret' not in {n for n, _ in names}
    assert max(depth for _, depth in names) == 4  # the folder at 4 is seen, not entered
    remove_tree(root)
    assert not root.exists() and (outside / 'secret').is_file()


def test_a_walk_says_which_folders_it_did_not_enter(tmp_path, monkeypatch):
    """A folder past the depth and one that cannot be opened were stepped over without a word:
    a walk that measures or copies could not tell an empty folder from an unwalked one."""
    import harness_types.folder_walk as folder_walk

    root = tmp_path / 'root'
    root.mkdir()
    nested(root, 5, 'n')
    (root / 'closed').mkdir()
    real_open = folder_walk.open_folder

    def open_folder(name, dir_fd=None):  # (root opens any folder: a closed one refused here)
        if name == 'closed':
            raise PermissionError(13, 'Permission denied')
        return real_open(name, dir_fd)

    monkeypatch.setattr(folder_walk, 'open_folder', open_folder)
    told = []
    steps = list(walk(root, 3, lambda name, depth, error: told.append((name, depth, error))))
    assert {s.name for s in steps if s.info is not None} >= {'closed', 'n'}
    assert [(n, d) for n, d, e in told if e is None] == [('n', 4)]
    ((name, depth, error),) = [t for t in told if t[2] is not None]
    assert (name, depth) == ('closed', 1) and error.strerror == 'Permission denied'
    told.clear()
    list(walk(tmp_path / 'nothing', 3, lambda *t: told.append(t)))
    assert len(told) == 1 and told[0][:2] == (str(tmp_path / 'nothing'), 0)
