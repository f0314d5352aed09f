"""CellRunner, the program's side of a cell: what it says when an interrupt lands as the
program's code ends (while the runner puts the API's names back)."""

from harness_kernel.cell import CellRunner, CellTimeout


def test_an_interrupt_during_the_runners_own_work_is_the_cells_end_not_a_crash():
    runner = CellRunner({'pick': print}, lambda: None)
    restore, calls = runner.restore, []

    def interrupted_once():
        calls.append(runner.in_program)
        if len(calls) == 1:
            raise CellTimeout()  # the signal, landing as the names are put back
        return restore()

    runner.restore = interrupted_once
    outcome = runner.run('pick = None')
    assert outcome.status == 'error' and outcome.traceback == 'CellTimeout'
    assert outcome.restored == ['pick'] and calls == [False, False]
    assert runner.namespace['pick'] is print
