"""The bench tasks, by name: every module of this folder is one task (a plugin, see
harness_types.plugins) whose `TASK` is its `Task` class. Adding a task: its module here and its
reference program in harness_bench/reference/ (docs/ARCHITECTURE.md, "A bench task")."""

from harness_types.plugins import PluginError, builtin_plugins, load_plugin

from harness_bench.task import CATEGORIES, Conventions, Task

FOLDER = 'harness_bench.tasks'
MIN_LAYOUTS = 3  # fixed layouts a bench task has at least (the bench runs the first three)


def load_task(name: str) -> type[Task]:
    """The Task class of the task module `name` of this folder, checked: a Task named as its
    module, with at least MIN_LAYOUTS fixed layouts."""
    task = load_plugin('bench task', FOLDER, name, 'TASK')
    if not (isinstance(task, type) and issubclass(task, Task)):
        raise PluginError(f'bench task module {name!r}: TASK must be a Task class, not {task!r}')
    expected = name.rsplit('.', 1)[-1]
    if task.name != expected:
        raise PluginError(f'bench task module {name!r}: its Task is named {task.name!r}')
    if task.category not in CATEGORIES:
        raise PluginError(
            f'bench task {task.name!r}: category {task.category!r} is not one of {CATEGORIES}'
        )
    if not MIN_LAYOUTS <= task.layouts <= len(task.fixed):
        raise PluginError(
            f'bench task {task.name!r}: layouts {task.layouts} with {len(task.fixed)} fixed ones; '
            f'a bench task has at least {MIN_LAYOUTS}, each in `fixed`'
        )
    return task


TASKS: dict[str, type[Task]] = {name: load_task(name) for name in builtin_plugins(FOLDER)}


def make_task(name: str, conventions: Conventions | None = None) -> Task:
    """The task called `name`; a clear error lists the known ones."""
    if name not in TASKS:
        raise KeyError(f'unknown task {name!r}; known tasks: {", ".join(sorted(TASKS))}')
    return TASKS[name](conventions)
