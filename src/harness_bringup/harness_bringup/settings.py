"""What the `harness` commands share: the configuration file with the command line's overrides, the
policy catalogue and its broker."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from harness_types.config import not_a_file

from harness_bringup.arguments import DEFAULT_POLICIES
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say


def _attachable() -> None:
    """UsageError when ROS_DOMAIN_ID is no domain: said now, not once the graph fails to join
    it."""
    from harness_bringup.domain import attached_domain_id
    from harness_bringup.run import UsageError

    try:
        attached_domain_id()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _not_started(folder: Path, base: dict, problem: str, status: str) -> int:
    """An episode that could not start (its model server or policy servers do not answer:
    `status` model_service_failed or policy_service_failed; a Ctrl-C while they started:
    interrupted): its run folder still says why (events, summary, report), and the command
    fails in one line."""
    from harness_driver.budgets import Usage, usage_fields
    from harness_recording.run_folder import RunFolder

    from harness_bringup.run import write_report_safely

    run = RunFolder(folder)
    run.event({'type': 'end', 'status': status, 'detail': problem})
    nothing_used = usage_fields(Usage(), 0, {}, 0)
    run.summary({**base, 'status': status, 'detail': problem, **nothing_used, 'bag': None})
    run.close()
    write_report_safely(run.path, lambda _line: None)
    return _fail(problem)


def _config_path(args: argparse.Namespace) -> Path | None:
    """--config, else $HARNESS_CONFIG, else ./config/harness.yaml, else the workspace's."""
    from harness_types.config import config_file

    return config_file(args.config)


def _outcome_line(success: bool, score: float, detail: str) -> str:
    return f'outcome: {"SUCCESS" if success else "no success"} (score {score:.2f}): {detail}'


def _load(args: argparse.Namespace, **driver_overrides):
    """The configuration file with the command line's overrides (the driver's section, and
    --perception of the kernel's)."""
    from harness_types.config import load_config, with_overrides

    path = _config_path(args)
    config = with_overrides(load_config(path), 'driver', **driver_overrides)
    return with_overrides(
        config,
        'kernel',
        perception=getattr(args, 'perception', None),
        policies=_policies_path(args, path),
    )


def _policies_path(args: argparse.Namespace, config: Path | None) -> str | None:
    """--policies FILE, or the catalogue beside the config file for a bare --policies (None:
    the config's kernel.policies stands)."""
    given = getattr(args, 'policies', None)
    if given is None:
        return None
    if given == DEFAULT_POLICIES:
        folder = config.parent if config is not None else Path('config')
        given = str(folder / 'policies.yaml')
    if not Path(given).is_file():
        raise FileNotFoundError(f'policy catalogue {given} {not_a_file(Path(given))}')
    return str(Path(given).resolve())


def _broker(config, logs: Path | None = None):
    """The policy broker of the configured catalogue (None without policies); `logs`: where
    the servers it starts write their output (None: this process's)."""
    from harness_bringup.policy_broker import PolicyBroker
    from harness_bringup.policy_servers import SERVERS
    from harness_bringup.run import UsageError, policy_catalog

    catalog = policy_catalog(config)
    if catalog is None:
        return None
    for spec in catalog.policies.values():  # said now, not once its server failed to start
        if spec.serve and spec.serve not in SERVERS:
            raise UsageError(
                f'{catalog.path}: policy {spec.name} serves {spec.serve!r}, which `harness '
                f'policy serve` does not know; it knows: {", ".join(SERVERS)}'
            )
    return PolicyBroker(catalog, config.path, _say, logs)


def _with_policies(
    config,
    work,
    logs: Path | None = None,
    failed=_fail,
    tasks: list[str] | None = None,
    interrupted: Callable[[], int] | None = None,
) -> int:
    """`work()` with the catalogue's local policy servers answering (started here when they
    do not, stopped after: those of policies that learned the kind of one of `tasks`);
    `failed(problem)` (default: one line, exit 2) when they cannot be; `interrupted()` (default:
    exit 130) at a Ctrl-C while they start. An episode of `harness
    bench` starts none: the bench's own broker owns them (BROKERED)."""
    from harness_bringup.policy_broker import BROKERED, BrokerError
    from harness_bringup.run import UsageError

    try:
        broker = _broker(config, logs)  # the catalogue is checked either way
    except UsageError as exc:
        return _fail(str(exc))
    if broker is None or os.environ.get(BROKERED):
        return work()
    kinds = None
    if tasks:
        from harness_bench.tasks import TASKS

        kinds = {TASKS[t].kind for t in tasks if t in TASKS}
    with broker:
        try:
            broker.ensure(kinds)
        except BrokerError as exc:
            return failed(str(exc))
        except KeyboardInterrupt:
            return interrupted() if interrupted is not None else 130
        return work()
