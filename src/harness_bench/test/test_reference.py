"""Every task has a reference program; its cells split on `# %%` lines and compile."""

import pytest
from harness_bench.reference import reference_cells, reference_path, split_cells
from harness_bench.tasks import TASKS


@pytest.mark.parametrize('task', sorted(TASKS))
def test_every_task_has_a_reference_program_that_compiles(task):
    cells = reference_cells(task)
    assert len(cells) >= 2
    for i, cell in enumerate(cells):
        compile(cell, f'{task} cell {i}', 'exec')
    assert 'finish(' in cells[-1]
    compile(reference_path(task).read_text(), task, 'exec')  # whole, for `harness program`


def test_cells_split_on_markers_and_skip_empty_ones():
    text = '# header comment\n# %% first\na = 1\n\n# %% second\nb = 2\n# %%\n# only a comment\n'
    assert split_cells(text) == ['# %% first\na = 1\n', '# %% second\nb = 2\n']


def test_an_unknown_task_has_no_reference():
    with pytest.raises(KeyError, match="no reference program for task 'nope'"):
        reference_path('nope')
