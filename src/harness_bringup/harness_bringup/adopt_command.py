"""`harness policy adopt CANDIDATE --for TASK...`: the adoption gate (harness_learning.adoption)
run as two benches on the same held-out sampled layouts: the candidate with the programs as
fallback (strategy C: the policy's run first, bounded to half the episode, then the programs
finish what it left), and the incumbent (the catalogue's policy for those tasks, the same way;
or the programs alone)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness_bringup.arguments import DEFAULT_POLICIES, _layouts, _positive_int, _seed
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say


def add_parser(policy_sub) -> None:
    adopt = policy_sub.add_parser(
        'adopt',
        help='the adoption gate: a trained policy replaces the incumbent only if it is no worse',
        description='Run CANDIDATE (a `harness policy train` folder) and the incumbent (the '
        "catalogue's policy for the tasks' kind, or the programs alone) on the same held-out "
        'sampled layouts of TASKs, none of which the candidate trained on. The candidate runs '
        'with the programs as fallback (strategy C: its run bounded to half the episode, then the '
        'programs finish what it left). It is adopted when it finishes at least '
        '--min-finish of its runs on its own, at least as many as the incumbent, and the kit '
        'succeeds on no fewer layouts: then the catalogue entry serves a copy of its weights, '
        'its version one higher. Either way the decision, the seeds and the figures are '
        "appended to adoption_log.jsonl beside the catalogue; the two benches' run folders "
        'are under --out.',
    )
    adopt.add_argument('candidate', help='a `harness policy train --out` folder')
    adopt.add_argument(
        '--for', dest='tasks', nargs='+', required=True, metavar='TASK', help='the tasks it is for'
    )
    adopt.add_argument(
        '--name',
        help="the catalogue entry it would become (default: the incumbent's, else "
        'act_TASK of the first task)',
    )
    adopt.add_argument(
        '--policies',
        metavar='FILE',
        help='the catalogue (default: kernel.policies, else policies.yaml beside the config)',
    )
    adopt.add_argument(
        '--layouts',
        type=_layouts,
        default=(10, True),
        metavar='random:N',
        help='held-out sampled layouts per task (default random:10)',
    )
    adopt.add_argument(
        '--seed-base',
        type=_seed,
        default=9000,
        help="the first held-out seed (default 9000); none may be a seed the candidate's "
        'demonstrations came from',
    )
    adopt.add_argument(
        '--min-finish',
        type=float,
        default=0.5,
        help='the share of its runs it must finish on its own (default 0.5)',
    )
    adopt.add_argument('--out', required=True, metavar='DIR', help='a new folder for the gate')
    adopt.add_argument(
        '--jobs', type=_positive_int, help='episodes at a time (default: one per two cores)'
    )
    adopt.set_defaults(func=run_adopt)


def run_adopt(args: argparse.Namespace) -> int:
    from harness_bench.tasks import TASKS
    from harness_learning.adoption import (
        AdoptionError,
        GateRecord,
        GateRule,
        catalogue_entry,
        decide,
        figures,
        log_decision,
        now,
        replace_entry,
        side_dict,
        store_checkpoint,
        trained_layouts,
        training_record,
    )
    from harness_policy.catalog import load_catalog
    from harness_types.config import ConfigError

    from harness_bringup import cli
    from harness_bringup.settings import _config_path, _load, _policies_path

    count, sampled = args.layouts
    if not sampled:
        return _fail('--layouts must be random:N: the gate runs held-out sampled layouts')
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown:
        return _fail(f'no task {", ".join(unknown)}; tasks: {", ".join(TASKS)}')
    try:
        rule = GateRule(args.min_finish)
    except ValueError as exc:
        return _fail(f'--min-finish: {exc}')
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return _fail(f'{out} exists and is not an empty folder: choose a new --out')
    candidate = Path(args.candidate).resolve()
    try:
        config_file = _config_path(args)
        config = _load(args)
        catalogue_path = Path(
            config.kernel.policies
            or _policies_path(argparse.Namespace(policies=DEFAULT_POLICIES), config_file)
        )
        catalogue = load_catalog(catalogue_path)
        record = training_record(candidate)
        trained = trained_layouts(record)
    except (FileNotFoundError, ConfigError, AdoptionError) as exc:
        return _fail(str(exc))
    seeds = list(range(args.seed_base, args.seed_base + count))
    seen = sorted((t, s) for t in args.tasks for s in seeds if (t, s) in trained)
    if seen:
        return _fail(
            f'the candidate trained on {len(seen)} of these layouts (e.g. {seen[0][0]} seed '
            f'{seen[0][1]}): choose a --seed-base past its demonstrations'
        )
    kinds = {TASKS[t].kind for t in args.tasks}
    if len(kinds) > 1:
        return _fail(f'the tasks are of several kinds ({", ".join(sorted(kinds))}): gate one')
    kind = kinds.pop()
    incumbents = {catalogue.for_kind(kind, TASKS[t].instruction) for t in args.tasks}
    incumbent = incumbents.pop() if len(incumbents) == 1 else None
    if incumbents:
        return _fail('the tasks have different incumbent policies: gate them one at a time')
    # A trained incumbent is replaced under its name; a stand-in or an external server stays,
    # and an adopted candidate goes in before it (the strategy rule takes the first).
    replaced = incumbent if incumbent is not None and incumbent.serve == 'lerobot' else None
    if replaced is not None and args.name and args.name != replaced.name:
        return _fail(
            f'the incumbent for {kind} is {replaced.name}: a candidate replaces it under its '
            'name (leave out --name)'
        )
    name = args.name or (replaced.name if replaced else f'act_{args.tasks[0]}')
    doc = _catalogue_doc(catalogue_path)
    if replaced is None and name in doc['policies']:
        return _fail(f'{catalogue_path} has a policy {name} already: choose another --name')
    base = doc['policies'].get(replaced.name) if replaced is not None else None
    if base is None:  # a fresh entry: the kinds it learned, the cameras as the station has
        base = {
            'endpoint': 'ws://127.0.0.1:0',  # a free port, chosen when the broker starts it
            'action_space': 'joint_position',
            'action_hz': float(record.get('fps') or 25.0),  # the rate of its demonstrations
            'learned': [kind],
            'finishes': [kind],
            'stall_seconds': 5.0,
            'timeout_seconds': 60.0,
        }
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f'--out {out}: {exc.strerror or exc}')
    # The candidate's side: the catalogue with it as the entry for these tasks.
    trial = dict(base, serve='lerobot', checkpoint=str(candidate), description='the candidate')
    trial.pop('version', None)
    trial['instructions'] = sorted(record.get('tasks') or {})
    candidate_doc = json.loads(json.dumps(doc))
    for other, entry in list(candidate_doc['policies'].items()):  # the candidate alone for it
        if other != name and kind in (entry.get('learned') or []):
            candidate_doc['policies'].pop(other)
    candidate_doc['policies'][name] = trial
    for entry in candidate_doc['policies'].values():  # relative paths were the catalogue's
        if entry.get('checkpoint') and not Path(entry['checkpoint']).is_absolute():
            entry['checkpoint'] = str((catalogue_path.parent / entry['checkpoint']).resolve())
    import yaml

    candidate_catalogue = out / 'candidate_policies.yaml'
    candidate_catalogue.write_text(yaml.safe_dump(candidate_doc, sort_keys=False))
    common = ['--tasks', *args.tasks, '--layouts', f'random:{count}']
    common += ['--seed-base', str(args.seed_base), '--model', 'scripted']
    common += ['--jobs', str(args.jobs)] if args.jobs else []
    config_args = ['--config', str(config_file)] if config_file is not None else []
    label = f'candidate {candidate}'
    _say(f'gate: {label} for {", ".join(args.tasks)} on seeds {seeds[0]}..{seeds[-1]}')
    status = _bench(
        cli,
        [*config_args, 'bench', *common, '--policies', str(candidate_catalogue)]
        + ['--strategies', 'C', '--out', str(out / 'candidate')],
    )
    if status:
        return _fail(f"the candidate's bench failed (exit {status}); see {out / 'candidate'}")
    if incumbent is not None:
        incumbent_label = f'incumbent {incumbent.name} (version {incumbent.version})'
        side = ['--policies', str(catalogue_path), '--strategies', 'C']
    else:
        incumbent_label = 'incumbent: the programs alone'
        side = []
    _say(f'gate: {incumbent_label} on the same layouts')
    status = _bench(cli, [*config_args, 'bench', *common, *side, '--out', str(out / 'incumbent')])
    if status:
        return _fail(f"the incumbent's bench failed (exit {status}); see {out / 'incumbent'}")
    try:
        mine = figures(label, out / 'candidate')
        theirs = figures(incumbent_label, out / 'incumbent')
    except AdoptionError as exc:
        return _fail(str(exc))
    decision = decide(mine, theirs, rule)
    version = None
    if decision.adopt:
        version = (replaced.version if replaced is not None else 0) + 1
        store = _store_folder(catalogue_path, replaced, name, version)
        try:
            store_checkpoint(candidate, store)
        except AdoptionError as exc:
            return _fail(str(exc))
        gate = (
            f'on {len(seeds)} held-out sampled layouts of {", ".join(args.tasks)} (seeds '
            f'{seeds[0]}..{seeds[-1]}) it finished {mine.finished_runs} of its '
            f'{mine.policy_runs} runs alone and the kit succeeded on {mine.successes}/'
            f'{mine.episodes}; {theirs.line()}.'
        )
        relative = _relative(store, catalogue_path.parent)
        entry = catalogue_entry(record, relative, base, version, gate)
        before = incumbent.name if incumbent is not None and replaced is None else None
        replace_entry(catalogue_path, name, entry, before=before)
    log = log_decision(
        catalogue_path,
        GateRecord(
            now(),
            str(candidate),
            name,
            list(args.tasks),
            seeds,
            incumbent_label,
            decision.adopt,
            decision.reasons,
            side_dict(mine),
            side_dict(theirs),
            version,
        ),
    )
    (out / 'gate.json').write_text(log.read_text().splitlines()[-1] + '\n')
    _say(mine.line())
    _say(theirs.line())
    for reason in decision.reasons:
        _say(f'  {reason}')
    if decision.adopt:
        _say(f'ADOPTED: {name} is version {version} in {catalogue_path}; logged in {log}')
    else:
        _say(f'KEPT the incumbent: the candidate did not pass; logged in {log}')
    return 0


def _bench(cli, argv: list[str]) -> int:
    """`harness bench ARGV` in this process, its tables kept off standard output (the gate's
    verdict is this command's output; the tables are in the bench folders)."""
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):
        return cli.main(argv)


def _catalogue_doc(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


def _store_folder(catalogue: Path, incumbent, name: str, version: int) -> Path:
    """Where an adopted version's weights go: beside the incumbent's checkpoint folder when
    it is served from one, else in policies/ beside the catalogue."""
    if incumbent is not None and incumbent.checkpoint:
        folder = Path(incumbent.checkpoint).parent
    else:
        folder = catalogue.parent / 'policies'
    return folder / f'{name}-v{version}'


def _relative(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path.resolve(), start.resolve())
