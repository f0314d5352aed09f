"""The `harness` command: its parser (each command's arguments and handler are a module of their
own, `*_command`; `harness --help` lists them), the checks of where a command writes, and
`main`."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from harness_bringup import (
    bench_command,
    dataset_command,
    mcp_command,
    outcome_command,
    plan_command,
    policy_command,
    program_command,
    report_command,
    run_command,
    serve_command,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import one_line


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose refusal of the command line is one line, as every other bad
    input's is (argparse printed its usage block first); its subcommands' parsers are of this
    kind too (add_subparsers makes them of the parent's class)."""

    def error(self, message: str):
        # (the root parser also refuses a subcommand's unknown flags)
        see = 'harness COMMAND --help' if self.prog == 'harness' else f'{self.prog} --help'
        self.exit(2, f'{self.prog}: error: {one_line(message)} (see {see})\n')


CONFIG_HELP = (
    'node graph parameters (default: $HARNESS_CONFIG, which ./harness sets to '
    "config/harness.yaml, else ./config/harness.yaml, else the workspace's config/harness.yaml)"
)
# The commands that read the node graph's parameters: they take --config after their name too
# (`harness run lift_cube --config FILE`), as the guide shows.
CONFIGURED = (
    'run',
    'bench',
    'program',
    'serve',
    'up',
    'mcp',
    'demos',
    'policy serve',
    'policy adopt',
)


def _take_config_after(parser: argparse.ArgumentParser) -> None:
    """--config on each CONFIGURED command's own parser too (given there, it wins)."""
    for path in CONFIGURED:
        command = parser
        for name in path.split():
            (subs,) = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
            command = subs.choices[name]
        command.add_argument('--config', default=argparse.SUPPRESS, help=CONFIG_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog='harness',
        description='Run the dual-arm ARX X5 harness: episodes with a model, programs without '
        'one, the worker alone, a set-up check.',
    )
    parser.add_argument('--config', help=CONFIG_HELP)
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    run_command.add_parser(sub)
    bench_command.add_parser(sub)
    program_command.add_parser(sub)
    serve_command.add_parser(sub)
    policy_command.add_parser(sub)
    mcp_command.add_parser(sub)
    dataset_command.add_parser(sub)
    report_command.add_parser(sub)
    plan_command.add_parser(sub)
    outcome_command.add_parser(sub)
    _take_config_after(parser)
    return parser


# Where a command writes: checked (and made) before anything starts, so that a file or an
# unwritable place in the way is one line, not a traceback after the graph started. The folders
# made for it are removed again if the command fails and leaves them empty (bad other input).
# command: (attribute, flag, True when the flag names a file whose folder is made)
OUT = ('out', '--out', False)


OUTPUTS = {
    'run': (OUT,),
    'program': (OUT,),
    'bench': (OUT,),
    'demos': (OUT,),
    'mcp': (OUT, ('journal', '--journal', True)),
    'export': (('lerobot', '--lerobot', False),),
}


# The longest output path taken: the run folders and files below it (a bench's episodes, a
# bag's files) add up to ~300 characters, within the system's 4096 of a whole path.
MAX_OUTPUT_PATH = 3500


def _output_problem(text: str, names_file: bool, made: list[Path]) -> str:
    """Why `text` cannot be written to (its folder made), or ''. The folders it made are
    appended to `made` (_make_folder)."""
    if not text.strip():
        return 'names no folder' if not names_file else 'names no file'
    if any(c in text for c in '\n\r'):  # (rosbag2 and the logs cannot name such a path)
        return 'has a line break: the recordings below it cannot be named'
    if len(os.path.abspath(text)) > MAX_OUTPUT_PATH:
        return (
            f'is {len(os.path.abspath(text))} characters long as an absolute path: at most '
            f'{MAX_OUTPUT_PATH} leave room for the run folders below it'
        )
    path = Path(text)
    folder = path.parent if names_file else path
    if names_file and path.is_dir():
        return 'is a folder'
    above = folder
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return 'is a file, not a folder' if above == path else f'is inside {above}, a file'
    try:
        _make_folder(folder, made)
    except OSError as exc:
        return f'cannot be made: {exc.strerror or exc}'
    if not os.access(folder, os.W_OK | os.X_OK):
        return 'is not writable' if folder == path else f'is in {folder}, which is not writable'
    return ''


def _make_folder(folder: Path, made: list[Path]) -> None:
    """Make `folder` and the missing folders above it one at a time, appending to `made` only
    those this call made, outermost first: a folder that was there, or that another process
    made meanwhile, is never taken for ours."""
    for step in [*reversed(folder.parents), folder]:
        if step.is_dir():
            continue
        try:
            step.mkdir()
        except FileExistsError:
            continue  # made meanwhile by another process: not ours (a file fails below)
        made.append(step)


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders made for a failed command's output that it left empty, innermost
    first."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty: what is above it is not empty either
            return


# A path's errors that say the path given is unusable, whichever command met it first.
UNUSABLE_PATH = frozenset((errno.ENAMETOOLONG, errno.ELOOP))


def main(argv: list[str] | None = None) -> int:
    from harness_bringup.processes import use_wheels_ament_prefix

    argv = sys.argv[1:] if argv is None else list(argv)
    use_wheels_ament_prefix()
    parser = build_parser()
    # `harness serve --ros-args -p x:=1`: what follows --ros-args is ROS's, not argparse's.
    split = argv.index('--ros-args') if '--ros-args' in argv else None
    ros_args = None if split is None else argv[split + 1 :]
    # (Python 3.11's argparse takes `--opt=--` as an empty list, past the option's type check)
    given_dashes = [a for a in argv[:split] if a.startswith('--') and a.endswith('=--')]
    if given_dashes:
        flag = given_dashes[0].split('=', 1)[0]
        return _fail(f"{given_dashes[0]}: '--' is no value for {flag}")
    args = parser.parse_args(argv[:split])
    if ros_args is not None and args.command != 'serve':
        return _fail(f'only `harness serve` takes --ros-args, not `harness {args.command}`')
    if args.command == 'serve':
        args.ros_args = [a for a in args.ros_args if a != '--'] + (ros_args or [])
    args.argv = argv
    made: list[Path] = []
    code = 1  # until the command returns: an exception leaves nothing of its own either
    try:
        for name, flag, names_file in OUTPUTS.get(args.command, ()):
            value = getattr(args, name, None)
            if value is not None and (problem := _output_problem(value, names_file, made)):
                code = _fail(f'{flag} {value!r} {problem}')
                return code
        code = args.func(args)
        return code
    except OSError as exc:
        if exc.errno not in UNUSABLE_PATH:  # a path no command can use, said in one line
            raise
        code = _fail(f'{exc.filename!r}: {exc.strerror}' if exc.filename else str(exc))
        return code
    except RuntimeError as exc:  # Path.resolve's own word for a link loop (Python 3.11)
        if not str(exc).startswith('Symlink loop'):
            raise
        code = _fail(str(exc))
        return code
    except KeyboardInterrupt:  # a command with nothing of its own to say (each writes whole)
        code = 130
        print(f'harness {args.command}: interrupted', file=sys.stderr)
        return code
    finally:
        if code != 0:
            _remove_if_empty(made)


if __name__ == '__main__':
    sys.exit(main())
