"""Claim a ROS domain id that no other process on this machine is using, and the Fast DDS
discovery profile every process of a claimed domain uses.

Tests that start nodes and bench runs that start one graph per episode each need their own
`ROS_DOMAIN_ID`, so their nodes never see each other's. A claim is an exclusive `flock` on a
file per id; the kernel drops the lock when the process exits, however it exits.
"""

import contextlib
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness_types.whole_file import open_regular

# Fast DDS maps a domain to UDP ports 7400 + 250 * id + offsets; ids above 232 overflow.
FIRST_ID = 100
LAST_ID = 232


@dataclass
class DomainClaim:
    """An exclusively held domain id; `release()` or process exit gives it back."""

    domain_id: int
    _lock_file: IO[str]

    def release(self) -> None:
        self._lock_file.close()


PROFILE_VARIABLE = 'FASTDDS_DEFAULT_PROFILES_FILE'
TRANSPORTS_VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'


def participant_profile_env() -> dict[str, str]:
    """The environment that gives a process the harness's Fast DDS participant profile
    (fastdds_profile.xml: faster announcements, room for camera views in shared memory): empty
    when the user chose a profile of their own or Fast DDS's transports
    (FASTDDS_BUILTIN_TRANSPORTS, which the profile's own transports would override), or the
    file is not installed."""
    profile = Path(__file__).with_name('fastdds_profile.xml')
    chosen = PROFILE_VARIABLE in os.environ or TRANSPORTS_VARIABLE in os.environ
    if chosen or not profile.is_file():
        return {}
    return {PROFILE_VARIABLE: str(profile)}


def use_discovery_profile() -> None:
    """Make this process and the processes it starts use the harness's Fast DDS participant
    profile, unless the user set one. Call before the first participant is created."""
    os.environ.update(participant_profile_env())


def attached_domain_id() -> int:
    """The domain of a station started outside the harness: ROS_DOMAIN_ID (default 0);
    ValueError when it is not one."""
    text = os.environ.get('ROS_DOMAIN_ID', '').strip() or '0'
    try:
        domain_id = int(text)
    except ValueError:
        raise ValueError(f'ROS_DOMAIN_ID must be an integer, not {text!r}') from None
    if not 0 <= domain_id <= 232:
        raise ValueError(f'ROS_DOMAIN_ID must be within 0..232, not {domain_id}')
    return domain_id


def claim_domain_id(lock_dir: Path | None = None) -> DomainClaim:
    """Return a free domain id in [100, 232], held until released or the process ends.

    The search starts at a point that moves with time and process id, so an id released a
    moment ago (whose nodes other processes may still remember until their discovery lease
    runs out) is not handed straight out again. Also selects the harness's discovery profile
    (use_discovery_profile), since whoever claims a domain is about to create participants.

    Domains are the machine's, whichever user runs an episode, so the lock folder is shared:
    made open to every user (sticky, as /tmp), and a lock file another user made is locked
    through a read-only descriptor (flock needs no write access).
    """
    use_discovery_profile()
    lock_dir = _lock_folder(lock_dir)
    count = LAST_ID - FIRST_ID + 1
    start = (os.getpid() * 7 + time.monotonic_ns() // 1_000_000) % count
    closed = 0
    for k in range(count):
        domain_id = FIRST_ID + (start + k) % count
        claim = _claim(lock_dir, domain_id)
        if claim is CLOSED:
            closed += 1
        elif claim is not None:
            return claim
    if closed:
        raise RuntimeError(
            f'no ROS domain id can be claimed: {closed} of the lock files in {lock_dir} cannot '
            'be opened or made by this user, the others are in use (the folder must be open '
            f'to every user running the harness here: chmod 1777 {lock_dir})'
        )
    raise RuntimeError(
        f'every ROS domain id from {FIRST_ID} to {LAST_ID} is in use on this machine'
    )


def claim_named_domain_id(domain_id: int, lock_dir: Path | None = None) -> DomainClaim:
    """Hold `domain_id` (the one ROS_DOMAIN_ID names: harness serve's) as claim_domain_id holds
    one: RuntimeError, naming the holder, when another process of this machine holds it (two
    stations in one domain would answer every request twice)."""
    use_discovery_profile()
    lock_dir = _lock_folder(lock_dir)
    claim = _claim(lock_dir, domain_id)
    if isinstance(claim, DomainClaim):
        return claim
    path = lock_dir / f'{domain_id}.lock'
    if claim is CLOSED:
        raise RuntimeError(f'ROS domain {domain_id} cannot be claimed: {path} cannot be opened')
    try:
        holder = path.read_text().strip()
    except OSError:
        holder = ''
    by = f' (by process {holder})' if holder.isdigit() else ''
    raise RuntimeError(
        f'ROS domain {domain_id} is in use on this machine{by}: a harness serve or an '
        'episode runs there; stop it, or set another ROS_DOMAIN_ID'
    )


CLOSED = 'closed'  # _claim: the lock file cannot be opened or made by this user


def _lock_folder(lock_dir: Path | None) -> Path:
    lock_dir = lock_dir or Path(tempfile.gettempdir()) / 'harness-ros-domains'
    _shared_folder(lock_dir)
    return lock_dir


def _claim(lock_dir: Path, domain_id: int) -> DomainClaim | str | None:
    """The claim of `domain_id`, None when another process holds it, or CLOSED."""
    lock_file = _open_lock(lock_dir / f'{domain_id}.lock')
    if lock_file is None:
        return CLOSED
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock_file.close()
        return None
    if lock_file.writable():  # who holds it, for a person looking
        lock_file.truncate(0)
        lock_file.write(str(os.getpid()))
        lock_file.flush()
    return DomainClaim(domain_id, lock_file)


def _shared_folder(folder: Path) -> None:
    """Make `folder` if missing and, when this user owns it, open it to every user with the
    sticky bit (each user's lock files stay their own)."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        info = folder.stat()
        if info.st_uid == os.geteuid() and info.st_mode & 0o7777 != 0o1777:
            folder.chmod(0o1777)


def _open_lock(path: Path) -> IO[str] | None:
    """The lock file, read-write (made if missing, writable by every user), or read-only where
    another user made it; None when this user may neither open nor make it, or it is not a
    plain file of its own (in a folder every user may write, a link or a hard link planted
    there must not make a claim write or chmod what it points at)."""
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, 0o666, follow=False)
    except PermissionError:
        try:
            fd = open_regular(path, os.O_RDONLY, follow=False)
        except OSError:
            return None
    except OSError:  # a link (ELOOP), a folder, a FIFO: not a lock file
        return None
    info = os.fstat(fd)
    if info.st_nlink != 1:
        os.close(fd)
        return None
    writable = os.O_ACCMODE & fcntl.fcntl(fd, fcntl.F_GETFL) == os.O_RDWR
    if writable and info.st_uid == os.geteuid():
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)  # the umask took write from the others
    return os.fdopen(fd, 'r+' if writable else 'r')
