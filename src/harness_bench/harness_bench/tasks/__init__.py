"""The bench tasks, by name."""

from harness_bench.task import Conventions, Task
from harness_bench.tasks.handover_bar import HandoverBar
from harness_bench.tasks.insert_peg import InsertPeg
from harness_bench.tasks.lift_cube import LiftCube
from harness_bench.tasks.lift_tray import LiftTray
from harness_bench.tasks.open_drawer import OpenDrawer
from harness_bench.tasks.pick_moving import PickMoving
from harness_bench.tasks.pick_numbered import PickNumbered
from harness_bench.tasks.pick_pictured import PickPictured
from harness_bench.tasks.place_in_bowl import PlaceInBowl
from harness_bench.tasks.press_button import PressButton
from harness_bench.tasks.press_in_order import PressInOrder
from harness_bench.tasks.push_to_zone import PushToZone
from harness_bench.tasks.sort_by_colour import SortByColour
from harness_bench.tasks.stack_blocks_three import StackBlocksThree
from harness_bench.tasks.stack_blocks_two import StackBlocksTwo
from harness_bench.tasks.stack_in_order import StackInOrder

TASKS: dict[str, type[Task]] = {
    t.name: t
    for t in (
        LiftCube,
        PlaceInBowl,
        StackBlocksTwo,
        StackBlocksThree,
        PressButton,
        HandoverBar,
        PickNumbered,
        SortByColour,
        PushToZone,
        StackInOrder,
        LiftTray,
        InsertPeg,
        OpenDrawer,
        PickMoving,
        PickPictured,
        PressInOrder,
    )
}


def make_task(name: str, conventions: Conventions | None = None) -> Task:
    """The task called `name`; a clear error lists the known ones."""
    try:
        return TASKS[name](conventions)
    except KeyError:
        raise KeyError(f'unknown task {name!r}; known tasks: {", ".join(sorted(TASKS))}') from None
