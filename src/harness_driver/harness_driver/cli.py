"""The `harness` command."""

import argparse
import json
import sys
from dataclasses import asdict


def _smoke(_args: argparse.Namespace) -> int:
    from harness_worker.ros_domain import claim_domain_id

    from harness_driver.smoke import run_smoke

    claim = claim_domain_id()
    try:
        result = run_smoke(claim.domain_id)
    finally:
        claim.release()
    print(json.dumps({'ok': True, 'domain_id': claim.domain_id, **asdict(result)}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='harness',
        description='Run the dual-arm ARX X5 harness: episodes, programs, the worker.',
    )
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    smoke = sub.add_parser(
        'smoke',
        help='check the workspace: two nodes, a service and an action round trip',
        description='Start two real nodes in a private ROS domain and do a harness_msgs '
        'service and action round trip; prints JSON with the latencies.',
    )
    smoke.set_defaults(func=_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
