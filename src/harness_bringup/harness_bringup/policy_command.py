"""`harness policy serve|train|adopt`: one catalogue policy served, a policy trained with LeRobot,
the adoption gate (adopt_command)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness_bringup import adopt_command
from harness_bringup.arguments import (
    DEFAULT_POLICIES,
    _port,
    _positive_int,
    _positive_int_at_most,
    _seed,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say
from harness_bringup.settings import _config_path, _load, _policies_path

# A CPU trains ~10 steps a second: more than this would take longer than a year.
MAX_STEPS = 100_000_000


def add_parser(sub) -> None:
    policy = sub.add_parser(
        'policy',
        help='policies: `harness policy train` (LeRobot, CPU), `harness policy adopt RUN` '
        '(the adoption gate) and `harness policy serve NAME`',
        description='Train a policy on a harness dataset with LeRobot (`train`), put a trained '
        'one through the adoption gate into the catalogue (`adopt`), or serve one of the '
        'catalogue (`serve`). Policy servers speak the websocket + msgpack protocol of openpi '
        'policy servers (docs/POLICY_PROTOCOL.md).',
    )
    policy_sub = policy.add_subparsers(dest='policy_command', required=True, metavar='COMMAND')
    policy_serve = policy_sub.add_parser(
        'serve',
        help='serve one policy of the catalogue',
        description="Serve policy NAME (a catalogue entry with `serve`) at its endpoint's "
        'host and port (or --host/--port) until interrupted; each connection gets a fresh '
        'policy.',
    )
    policy_serve.add_argument('name', help='a policy of the catalogue, e.g. scripted_expert')
    policy_serve.add_argument('--host', help="override the endpoint's host")
    policy_serve.add_argument('--port', type=_port, help="override the endpoint's port")
    policy_serve.add_argument(
        '--policies',
        metavar='FILE',
        help='the catalogue (default: kernel.policies, else policies.yaml beside the config file)',
    )
    policy_serve.set_defaults(func=_policy_serve)
    policy_train = policy_sub.add_parser(
        'train',
        help='train a policy on a dataset with LeRobot (CPU)',
        description="Train LeRobot's own ACT or diffusion policy class with LeRobot's own "
        'training script on a LeRobot v3.0 dataset of the harness (`harness demos`), on CPU, '
        'from scratch, in the learning extra (installed on first use: ~8 GB). The policy sees '
        'the joint state, the object the programs located (observation.environment_state) and '
        'the --cameras asked for. Progress shows step, loss and time left; checkpoints are '
        "LeRobot's (OUT/lerobot/checkpoints/STEP/pretrained_model); the same command resumes a "
        'stopped run; OUT/harness_training.json is the training record a catalogue entry is '
        'served from.',
    )
    policy_train.add_argument(
        '--dataset', required=True, metavar='DIR', help='a LeRobot v3.0 dataset'
    )
    policy_train.add_argument('--out', required=True, metavar='OUT', help='the training folder')
    policy_train.add_argument(
        '--policy',
        choices=('act', 'diffusion'),
        default='act',
        help="LeRobot's policy (default act)",
    )
    policy_train.add_argument(
        '--steps',
        type=_positive_int_at_most(MAX_STEPS),
        default=5000,
        help=f'default 5000, at most {MAX_STEPS}',
    )
    policy_train.add_argument('--batch-size', type=_positive_int, default=32, help='default 32')
    policy_train.add_argument('--seed', type=_seed, default=0, help='default 0')
    policy_train.add_argument(
        '--cameras', nargs='*', metavar='CAM', help='cameras the policy sees (default: none)'
    )
    policy_train.add_argument(
        '--save-every',
        type=_positive_int,
        default=1000,
        help='checkpoint every N steps (default 1000)',
    )
    policy_train.add_argument(
        '--threads',
        type=_positive_int,
        default=1,
        help="torch's threads (default 1: a small policy's step is fastest on one; more "
        'threads than free cores thrash)',
    )
    policy_train.add_argument(
        '--width',
        type=_positive_int,
        default=256,
        help="ACT's model width (dim_model; default 256: ~2.7M parameters, an 11 MB checkpoint; "
        '128: ~0.8M, 3 MB)',
    )
    policy_train.set_defaults(func=_policy_train)
    adopt_command.add_parser(policy_sub)


def _policy_serve(args: argparse.Namespace) -> int:
    from harness_policy.catalog import checkpoint_problem, load_catalog
    from harness_types.config import ConfigError

    from harness_bringup.policy_broker import BrokerError, host_port
    from harness_bringup.policy_servers import LEROBOT, SERVABLE, SERVERS, serve, serve_trained

    try:
        config = _load(args)
        path = config.kernel.policies or _policies_path(
            argparse.Namespace(policies=DEFAULT_POLICIES), _config_path(args)
        )
        spec = load_catalog(path).get(args.name)
        host, port = host_port(spec.endpoint)
    except (FileNotFoundError, ConfigError, BrokerError, ValueError) as exc:
        return _fail(str(exc))
    if not spec.serve:
        return _fail(f'policy {spec.name} is external (no `serve` in its catalogue entry)')
    host = args.host or host
    port = port if args.port is None else args.port
    if problem := checkpoint_problem(Path(path), spec):
        return _fail(problem)
    if spec.serve == LEROBOT:  # a trained checkpoint: served where torch and LeRobot are
        return serve_trained(spec.name, spec.checkpoint, host, port, _say)
    if spec.serve not in SERVABLE:
        return _fail(
            f'policy {spec.name}: no local server {spec.serve!r}; servers: {", ".join(SERVERS)}'
        )
    return serve(spec.serve, host, port, _say)


def _policy_train(args: argparse.Namespace) -> int:
    from harness_learning.training import (
        TrainError,
        TrainPlan,
        check_dataset,
        plan_problem,
        train,
    )
    from harness_policy.learning_env import LearningEnvError, ensure_learning_python

    plan = TrainPlan(
        dataset=Path(args.dataset),
        out=Path(args.out),
        policy=args.policy,
        steps=args.steps,
        batch_size=args.batch_size,
        seed=args.seed,
        cameras=tuple(args.cameras or ()),
        save_every=min(args.save_every, args.steps),
        log_every=max(1, min(50, args.steps // 10)),
        threads=args.threads,
        width=args.width,
    )
    try:
        if problem := plan_problem(plan):  # (these two before a minutes-long install)
            raise TrainError(problem)
        check_dataset(plan.dataset, plan.cameras)
        python = ensure_learning_python(_say)
        record = train(plan, python, _say)
    except (TrainError, LearningEnvError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        from harness_learning.training import checkpoint_step

        step = checkpoint_step(plan.out)
        _say(
            f'training stopped; the same command resumes it from its checkpoint at step {step} '
            f'in {plan.out}'
            if step
            else 'training stopped before its first checkpoint; the same command starts it again'
        )
        return 130
    _say(
        f'trained {record["policy"]} in {record["seconds"] / 60:.1f} min, final loss '
        f'{record["final_loss"]}; checkpoint {plan.out / record["checkpoint"]}'
    )
    _say(
        'serve it from the catalogue (config/policies.yaml): an entry with `serve: lerobot` and '
        f'`checkpoint: {plan.out.resolve()}`'
    )
    return 0
