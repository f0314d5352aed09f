"""`harness mcp TASK` and `harness tickets`: the station for a coding agent over MCP, and the
owner's tickets."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from pathlib import Path

from harness_operator.tool_names import POLICY_TOOLS, TOOLS
from harness_types.config import not_a_file

from harness_bringup.arguments import (
    DEFAULT_POLICIES,
    PERCEPTION_HELP,
    POLICIES_HELP,
    RANDOMIZE_HELP,
    _perception,
    _port,
    _randomize,
    _task_arguments,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import one_line
from harness_bringup.console import say as _say
from harness_bringup.settings import _load, _with_policies


def add_parser(sub) -> None:
    mcp = sub.add_parser(
        'mcp',
        help='serve the station to a coding agent over MCP (stdio, or --http PORT)',
        description='Start the node graph for TASK and serve it as an MCP server (the `mcp` '
        f'SDK) to an agent operator such as Claude Code: tools {", ".join(TOOLS[:-1])} and '
        f'{TOOLS[-1]} (with --policies also {" and ".join(POLICY_TOOLS)}, and the executor '
        'policy:NAME). Every action returns '
        "executor_status (what the motion did) and verdict (what the station's tiered verifier "
        'measured); the same key twice returns the same trial. Budgets per failure class '
        '(config: operator) open tickets when exhausted; `harness tickets` resolves them. The '
        'journal (--journal) outlives the session: started again with it, the server resumes '
        "the run (in simulation it runs the journal's trials again; on hardware nothing). "
        'Standard output carries the protocol; logs go to standard error. Writes a run folder '
        'per session, with its trials as a LeRobot dataset.',
    )
    _task_arguments(mcp, 'place_in_bowl')
    mcp.add_argument(
        '--randomize', type=_randomize, default=(), metavar='AXES', help=RANDOMIZE_HELP
    )
    mcp.add_argument(
        '--out', default='runs/mcp', help='run folders and journals (default runs/mcp)'
    )
    mcp.add_argument(
        '--journal',
        metavar='FILE',
        help='the run journal (default: OUT/TASK-lLAYOUT-sSEED.journal.jsonl); an existing one '
        'is resumed',
    )
    mcp.add_argument(
        '--new', action='store_true', help='start a fresh journal (the old one is kept, renamed)'
    )
    mcp.add_argument(
        '--http',
        type=_port,
        metavar='PORT',
        help='serve streamable HTTP at PORT/mcp, not stdio; every request needs the bearer '
        'token printed at start and written to OUT/mcp-PORT.token (mode 0600)',
    )
    mcp.add_argument(
        '--host',
        default='127.0.0.1',
        help='HTTP host (default 127.0.0.1: this machine alone; any other address is warned '
        'about: the token then crosses the network in clear text)',
    )
    mcp.add_argument('--perception', type=_perception, help=PERCEPTION_HELP)
    mcp.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    mcp.set_defaults(func=_mcp)

    tickets = sub.add_parser(
        'tickets',
        help="list a run journal's tickets, or resolve one (the station owner's call)",
        description='List the tickets of JOURNAL (opened when an agent operator exhausted a '
        'budget), or resolve one with --resolve ID: its failure class gets its budget again; a '
        'running `harness mcp` sees it at its next call.',
    )
    tickets.add_argument('journal', help='a run journal (harness mcp --journal)')
    tickets.add_argument('--resolve', metavar='ID', help='the ticket to resolve, e.g. T1')
    tickets.add_argument('--note', default='', help='what the owner did about it')
    tickets.set_defaults(func=_tickets)


def _mcp(args: argparse.Namespace) -> int:
    from harness_types.config import ConfigError

    from harness_bringup.mcp import McpOptions, protocol_stdout, serve_mcp
    from harness_bringup.run import UsageError, check_station_settings

    # Standard output is the protocol's: until the server takes it, everything this process and
    # its children (policy servers) print goes to standard error.
    with protocol_stdout() as serving:
        try:
            config = _load(args)
            check_station_settings(config, own_station=True)
        except (FileNotFoundError, ConfigError, UsageError) as exc:
            return _fail(str(exc))
        if args.http is not None:
            why = _unservable(args.host, args.http)
            if why:
                return _fail(why)
            if warning := _exposed(args.host):
                _say(warning, file=sys.stderr)
        options = McpOptions(
            args.task,
            args.layout,
            args.seed,
            Path(args.out),
            Path(args.journal) if args.journal else None,
            args.new,
            args.http,
            args.host,
            args.randomize,
        )

        def say(message: str) -> None:
            # (a terminal that hung up answers EIO: what it cannot show is lost, the stop and
            # the run folder's close go on)
            with contextlib.suppress(OSError):
                _say(message, file=sys.stderr)

        code = 1
        try:
            code = _with_policies(
                config, lambda: serve_mcp(config, options, say, serving), tasks=[args.task]
            )
        finally:
            _end_without_the_readers_thread(args, code)
    return code


def _end_without_the_readers_thread(args: argparse.Namespace, code: int) -> None:
    """Ends the process at once (code) when the SDK's stdio reader is still blocked in its
    read: the run folder is closed by now."""
    # An interrupt leaves the stdio transport's reader of standard input (a thread of the SDK)
    # blocked in its read: the process would live on, its pending call unanswered, until the
    # client wrote again. The run folder is closed by now: what is left gets a moment to end
    # (a tool call that outlived the close), then the process ends here.
    if args.http is None:
        main = threading.main_thread()
        left = [t for t in threading.enumerate() if t is not main and not t.daemon]
        for thread in left:
            thread.join(timeout=2.0 / len(left))
        if any(t.is_alive() for t in left):
            with contextlib.suppress(OSError):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)


def _unservable(host: str, port: int) -> str:
    """Why `harness mcp --http PORT --host HOST` cannot serve ('' when it can): the address is
    tried before the station starts (the HTTP server would fail only after it). Port 0 is
    refused: the client must know the port, and the token file is named by it."""
    import socket

    if port == 0:
        return '--http needs a port from 1 to 65535: a client must know it'
    if not host.strip():  # (the socket binds every interface, and the URL has no host)
        return '--host needs an address: 127.0.0.1 for this machine alone, 0.0.0.0 for all'
    try:
        socket.create_server((host, port)).close()
    except OSError as exc:  # an unknown host, a port in use or closed to this user
        return f'cannot serve HTTP at {host}:{port}: {exc.strerror or exc}'
    return ''


def _exposed(host: str) -> str:
    """A warning when `host` is not this machine's loopback alone: other machines reach the
    server, the token crosses the network in clear text, and the SDK checks no Host or Origin
    header (its DNS-rebinding guard is for loopback hosts)."""
    import ipaddress

    try:
        loopback = host == 'localhost' or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        loopback = False
    if loopback:
        return ''
    return (
        f'warning: --host {host} serves beyond this machine: the bearer token crosses the '
        'network in clear text (put TLS in front) and no Host or Origin header is checked'
    )


def _tickets(args: argparse.Namespace) -> int:
    from harness_operator.budgets import OperatorBudgets
    from harness_operator.journal import Journal, JournalError, resolve_ticket

    path = Path(args.journal)
    if not path.is_file():
        return _fail(f'journal {path} {not_a_file(path)}')
    if args.note and not args.resolve:
        return _fail('--note goes with --resolve ID (the ticket it is about)')
    if args.resolve is not None and not args.resolve.strip():
        return _fail('--resolve needs a ticket id, e.g. T1')
    try:
        if args.resolve:
            ticket = resolve_ticket(path, args.resolve, args.note)
            _say(f'ticket {ticket.id} resolved: the {ticket.failure_class} budget starts again')
            return 0
        journal = Journal(path, OperatorBudgets({}))
    except JournalError as exc:
        return _fail(str(exc))
    tickets = journal.budgets.tickets
    if not tickets:
        print('no tickets')
    for t in tickets:
        note = f' -> {t.resolution!r}' if t.resolution else ''
        print(one_line(f'{t.id} {t.status:8} {t.failure_class}: {t.reason}{note}'))
    return 0
