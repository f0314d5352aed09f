"""The machine's processes as tests of whole episodes see them (from /proc)."""

from pathlib import Path

SPAWNER = 'harness_kernel.program_spawner'  # a program process's parent (it forked it)


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, command line) of every live process on the machine (zombies left out)."""
    out = {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / 'stat').read_text()
            cmd = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        fields = stat.rsplit(')', 1)[1].split()
        if fields[0] != 'Z':
            out[int(entry.name)] = (int(fields[1]), cmd)
    return out


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every live process below `pid`."""
    table = processes()
    found, frontier = set(), {pid}
    while frontier:
        children = {p for p, (ppid, _) in table.items() if ppid in frontier}
        frontier = children - found
        found |= children
    return {p: table[p][1] for p in found if p in table}


def program_processes(pid: int) -> list[int]:
    """The program processes below `pid`: the children of a program spawner (forked, they
    carry its command line too)."""
    table = processes()
    below = descendants(pid)
    return [p for p in below if table.get(p) and SPAWNER in below.get(table[p][0], '')]
