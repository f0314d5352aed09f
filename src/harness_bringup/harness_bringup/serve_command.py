"""`harness serve`, `harness up` and `harness smoke`: the station for nodes started elsewhere, the
local policy servers, a check of the ROS set-up."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from dataclasses import asdict

from harness_bringup.arguments import DEFAULT_POLICIES
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say
from harness_bringup.settings import _broker, _load


def add_parser(sub) -> None:
    serve = sub.add_parser(
        'serve',
        help='start the station (worker and skill server) and serve it',
        description='Start the worker (with the configured backend) and the skill server in '
        'this process, with the parameters of the config file, and serve worker/* and skills/* '
        'until interrupted (ROS_DOMAIN_ID as set in the environment, 0..232: one station a '
        'domain on this machine, so a second serve there is refused). Attached episodes '
        '(harness run/program --attach) run on it one after another.',
    )
    serve.add_argument(
        'ros_args',
        nargs=argparse.REMAINDER,
        help='ROS arguments for both nodes: --ros-args -p [NODE:]NAME:=VALUE ... (or after --); '
        'a NAME neither node (worker, skill_server) declares is refused',
    )
    serve.set_defaults(func=_serve)

    up = sub.add_parser(
        'up',
        help="start the policy catalogue's local servers and keep them up",
        description='Start every local server of the policy catalogue (a policy whose entry '
        'has `serve`) that does not answer at its endpoint, and keep them up until interrupted, '
        'so that episodes with --policies find them answering. Without `harness up` an episode '
        'with policies starts the missing servers itself and stops them at its end. Only an '
        'entry with a fixed port is kept for other commands: an entry of port 0 gets a free '
        'port that later commands cannot know, so they start their own.',
    )
    up.add_argument(
        '--policies',
        metavar='FILE',
        help='the catalogue (default: kernel.policies, else policies.yaml beside the config file)',
    )
    up.set_defaults(func=_up)

    smoke = sub.add_parser(
        'smoke',
        help='check the workspace: two nodes, a service and an action round trip',
        description='Start two real nodes in a private ROS domain and do a harness_msgs '
        'service and action round trip; prints JSON with the latencies.',
    )
    smoke.set_defaults(func=_smoke)


def _serve(args: argparse.Namespace) -> int:
    from harness_types.config import ConfigError

    from harness_bringup.domain import attached_domain_id, claim_named_domain_id
    from harness_bringup.run import UsageError, check_station_settings
    from harness_bringup.serve import serve

    try:
        config = _load(args)
        check_station_settings(config)
        # one station a domain on this machine (harness run's own graphs claim theirs too)
        claim = claim_named_domain_id(attached_domain_id())
    except (FileNotFoundError, ConfigError, UsageError, ValueError, RuntimeError) as exc:
        return _fail(str(exc))
    try:
        return serve(config, args.ros_args, _say)
    finally:
        claim.release()


def _up(args: argparse.Namespace) -> int:

    from harness_types.config import ConfigError

    from harness_bringup.policy_broker import BrokerError, answers, host_port
    from harness_bringup.run import UsageError

    try:
        config = _load(args)
        if not config.kernel.policies:  # (as policy serve: kernel.policies, else the shipped)
            args.policies = DEFAULT_POLICIES
            config = _load(args)
        broker = _broker(config)
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))

    stopping = threading.Event()

    def interrupted(*_) -> None:
        stopping.set()  # (seen by the loop below even where the exception is not)
        raise KeyboardInterrupt  # SIGTERM stops the servers started here, as Ctrl-C does

    signal.signal(signal.SIGTERM, interrupted)
    with broker:
        try:
            started = broker.ensure()
        except BrokerError as exc:
            return _fail(str(exc))
        except KeyboardInterrupt:
            return 130
        for spec in broker.catalog.policies.values():
            if spec.name in started:
                state = 'started'
            elif spec.serve:
                state = 'already answering'
            else:
                state = 'external, ' + ('answering' if answers(spec.endpoint) else 'NOT answering')
            # (a catalogue port of 0: where it was started, which no later command can know)
            endpoint = broker.endpoints.get(spec.name, spec.endpoint)
            _say(f'policy {spec.name} at {endpoint}: {state}')
        if not started:  # (a second `up`: it would wait, holding nothing)
            _say('every local server was already answering: none started here, nothing to hold')
            return 0
        unknown = [n for n in started if host_port(broker.catalog.policies[n].endpoint)[1] == 0]
        if unknown:
            _say(
                f'{", ".join(unknown)}: port 0 in {config.kernel.policies}, so later commands '
                'cannot find these servers and start their own; give an entry a fixed port '
                '(endpoint: ws://127.0.0.1:PORT) to share its server'
            )
        _say('serving; Ctrl-C stops the servers started here')
        try:
            while not stopping.wait(UP_CHECK_S):
                # a server that ended (one that could take no more connections exits 1) is
                # said and started again
                ended = broker.ended()
                for name, status in ended.items():
                    _say(f'policy server {name} exited with status {status}: starting it again')
                if ended:
                    try:
                        broker.ensure()
                    except BrokerError as exc:
                        return _fail(str(exc))
            return 0
        except KeyboardInterrupt:
            return 0


# How often `harness up` looks at the servers it started.
UP_CHECK_S = 1.0


def _smoke(_args: argparse.Namespace) -> int:
    from harness_bringup.domain import claim_domain_id
    from harness_bringup.smoke import run_smoke

    claim = claim_domain_id()
    try:
        result = run_smoke(claim.domain_id)
    finally:
        claim.release()
    print(json.dumps({'ok': True, 'domain_id': claim.domain_id, **asdict(result)}))
    return 0
