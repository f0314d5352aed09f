"""Removing the shared memory of ended Fast DDS participants, on files laid out as Fast DDS
lays them out (a directory standing in for /dev/shm)."""

import fcntl
import os
from pathlib import Path

from harness_bringup.shared_memory import MIN_AGE_S, Sweep, remove_dead_segments

OLD = 1000.0  # seconds: older than MIN_AGE_S


def _segment(shm: Path, name: str, size: int = 4096, age: float = OLD) -> tuple[Path, Path]:
    segment, lock = shm / name, shm / f'{name}_el'
    segment.write_bytes(b'\0' * size)
    lock.touch()
    stamp = os.path.getmtime(lock) - age
    os.utime(lock, (stamp, stamp))
    return segment, lock


def test_a_segment_whose_lock_nobody_holds_is_removed_with_its_lock(tmp_path):
    segment, lock = _segment(tmp_path, 'fastdds_0123456789abcdef', size=8192)
    swept = remove_dead_segments(tmp_path)
    assert swept == Sweep(segments=1, bytes=8192)
    assert not segment.exists() and not lock.exists()
    assert swept.describe().startswith('removed 1 shared-memory segment (0 MiB)')


def test_a_segment_whose_owner_holds_its_lock_is_kept(tmp_path):
    segment, lock = _segment(tmp_path, 'fastdds_00000000000000aa')
    fd = os.open(lock, os.O_RDONLY)  # an open file description of its own, as another process
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert remove_dead_segments(tmp_path) == Sweep()
        assert segment.exists() and lock.exists()
    finally:
        os.close(fd)
    assert remove_dead_segments(tmp_path).segments == 1  # its owner ended


def test_a_young_segment_may_be_mid_creation_and_is_kept(tmp_path):
    segment, _ = _segment(tmp_path, 'fastdds_00000000000000bb', age=MIN_AGE_S / 2)
    assert remove_dead_segments(tmp_path) == Sweep()
    assert segment.exists()
    assert remove_dead_segments(tmp_path, min_age_s=0.0).segments == 1


def test_ports_and_other_files_are_not_touched(tmp_path):
    kept = [
        *_segment(tmp_path, 'fastdds_port7411'),
        tmp_path / 'sem.fastdds_port7411_mutex',
        *_segment(tmp_path, 'fastdds_not_a_segment'),
        *_segment(tmp_path, 'fastdds_0123456789ABCDEF'),  # Fast DDS writes lower-case hex
        *_segment(tmp_path, 'someone_else_0123456789abcdef'),
    ]
    kept[2].touch()
    assert remove_dead_segments(tmp_path) == Sweep()
    assert all(p.exists() for p in kept)


def test_a_lock_file_without_its_segment_is_removed(tmp_path):
    segment, lock = _segment(tmp_path, 'fastdds_00000000000000cc')
    segment.unlink()
    assert remove_dead_segments(tmp_path) == Sweep()
    assert not lock.exists()


def test_no_directory_is_nothing_to_sweep(tmp_path):
    assert remove_dead_segments(tmp_path / 'missing') == Sweep()
