"""Reference programs, one file per task, written only with the public program API.

A file is a sequence of cells separated by `# %%` lines, one contact per cell. The `scripted`
model answers with them cell by cell; run whole, a file is also a program for
`harness program TASK FILE`, and the regression tests run every one on every layout.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CELL_MARK = '# %%'


def reference_path(task: str) -> Path:
    """The reference program file of `task`; KeyError when the task has none."""
    path = Path(str(resources.files(__name__) / f'{task}.py'))
    if not path.is_file():
        raise KeyError(f'no reference program for task {task!r}')
    return path


def split_cells(text: str) -> list[str]:
    """The cells of a program file: the text between `# %%` lines, without empty cells."""
    cells, current = [], []
    for line in text.splitlines():
        if line.strip().startswith(CELL_MARK):
            cells.append('\n'.join(current))
            current = [line]
        else:
            current.append(line)
    cells.append('\n'.join(current))
    return [c.strip() + '\n' for c in cells if _has_code(c)]


def reference_cells(task: str) -> list[str]:
    """The reference program of `task`, cell by cell."""
    return split_cells(reference_path(task).read_text())


def _has_code(cell: str) -> bool:
    return any(line.strip() and not line.strip().startswith('#') for line in cell.splitlines())
