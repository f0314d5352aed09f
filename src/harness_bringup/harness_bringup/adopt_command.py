"""`harness policy adopt CANDIDATE --for TASK...`: the adoption gate (harness_learning.adoption)
run as two benches on the same held-out sampled layouts: the candidate with the programs as
fallback (strategy C: the policy's run first, bounded to half the episode, then the programs
finish what it left), and the incumbent (the catalogue's policy for those tasks, the same way;
or the programs alone)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness_bringup.arguments import (
    DEFAULT_POLICIES,
    _layouts,
    _positive_int,
    _seed,
    seeds_past_int64,
)
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
        "--min-finish of its runs on its own, a share at least the incumbent's, and the kit's "
        'success rate is no lower: then the catalogue entry serves a copy of its weights, '
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
        '--jobs', type=_positive_int, help='episodes at a time (default: as harness bench)'
    )
    adopt.set_defaults(func=run_adopt)


class _GateRefusedError(Exception):
    """The gate cannot run as asked; the message says why (the command's one line)."""


@dataclass
class _Gate:
    """What the gate compares, resolved from the arguments and the catalogue before anything
    runs."""

    tasks: list[str]
    seeds: list[int]
    rule: object  # harness_learning.adoption.GateRule
    out: Path
    candidate: Path
    record: dict  # the candidate's training record
    config_file: Path | None
    catalogue_path: Path
    doc: dict  # the catalogue as YAML
    kind: str
    incumbent: object | None  # the catalogue's policy for these tasks, if any
    replaced: object | None  # the incumbent a candidate replaces under its name (a trained one)
    name: str
    base: dict  # the entry the candidate's is made from


INTERRUPTED = 130  # a bench's exit when interrupted


def run_adopt(args: argparse.Namespace) -> int:
    from harness_learning.adoption import AdoptionError

    try:
        gate = _resolve(args)
        mine, theirs, labels = _run_sides(gate, args.jobs)
        return _decide(gate, mine, theirs, labels)
    except (_GateRefusedError, AdoptionError) as exc:
        return _fail(str(exc))


def _resolve(args: argparse.Namespace) -> _Gate:
    """The gate's sides, or _GateRefusedError: the layouts held out (none the candidate trained on),
    one kind of task, one incumbent, a name that replaces a trained incumbent or is new."""
    from harness_bench.tasks import TASKS
    from harness_learning.adoption import (
        AdoptionError,
        GateRule,
        trained_layouts,
        training_record,
    )
    from harness_policy.catalog import load_catalog
    from harness_types.config import ConfigError

    from harness_bringup.settings import _config_path, _load, _policies_path

    count, sampled = args.layouts
    if not sampled:
        raise _GateRefusedError(
            '--layouts must be random:N: the gate runs held-out sampled layouts'
        )
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown:
        raise _GateRefusedError(f'no task {", ".join(unknown)}; tasks: {", ".join(TASKS)}')
    try:
        rule = GateRule(args.min_finish)
    except ValueError as exc:
        raise _GateRefusedError(f'--min-finish: {exc}') from None
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise _GateRefusedError(f'{out} exists and is not an empty folder: choose a new --out')
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
        raise _GateRefusedError(str(exc)) from None
    if why := seeds_past_int64('--seed-base', args.seed_base, count):  # (a bench's seeds)
        raise _GateRefusedError(why)
    seeds = list(range(args.seed_base, args.seed_base + count))
    seen = sorted((t, s) for t in args.tasks for s in seeds if (t, s) in trained)
    if seen:
        raise _GateRefusedError(
            f'the candidate trained on {len(seen)} of these layouts (e.g. {seen[0][0]} seed '
            f'{seen[0][1]}): choose a --seed-base past its demonstrations'
        )
    kinds = {TASKS[t].kind for t in args.tasks}
    if len(kinds) > 1:
        raise _GateRefusedError(
            f'the tasks are of several kinds ({", ".join(sorted(kinds))}): gate one'
        )
    kind = kinds.pop()
    incumbents = {catalogue.for_kind(kind, TASKS[t].instruction) for t in args.tasks}
    incumbent = incumbents.pop() if len(incumbents) == 1 else None
    if incumbents:
        raise _GateRefusedError(
            'the tasks have different incumbent policies: gate them one at a time'
        )
    # A trained incumbent is replaced under its name; a stand-in or an external server stays,
    # and an adopted candidate goes in before it (the strategy rule takes the first).
    replaced = incumbent if incumbent is not None and incumbent.serve == 'lerobot' else None
    if replaced is not None and args.name and args.name != replaced.name:
        raise _GateRefusedError(
            f'the incumbent for {kind} is {replaced.name}: a candidate replaces it under its '
            'name (leave out --name)'
        )
    name = args.name or (replaced.name if replaced else f'act_{args.tasks[0]}')
    doc = _catalogue_doc(catalogue_path)
    if replaced is None and name in doc['policies']:
        raise _GateRefusedError(
            f'{catalogue_path} has a policy {name} already: choose another --name'
        )
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
    version = (replaced.version if replaced is not None else 0) + 1
    store = _store_folder(catalogue_path, replaced, name, version)
    if store.exists():  # said before the benches, not after them
        raise _GateRefusedError(
            f'{store} exists, where version {version} of {name} would be stored: remove it '
            '(a copy an adoption left?), or adopt under another --name'
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _GateRefusedError(f'--out {out}: {exc.strerror or exc}') from None
    return _Gate(
        list(args.tasks), seeds, rule, out, candidate, record, config_file, catalogue_path,
        doc, kind, incumbent, replaced, name, base,
    )  # fmt: skip


def _candidate_catalogue(gate: _Gate) -> Path:
    """The catalogue with the candidate as the one entry for the gate's kind (paths made
    absolute: the file is written elsewhere), written into the gate's folder."""
    import yaml

    trial = dict(
        gate.base, serve='lerobot', checkpoint=str(gate.candidate), description='the candidate'
    )
    trial.pop('version', None)
    trial['instructions'] = sorted(gate.record.get('tasks') or {})
    doc = json.loads(json.dumps(gate.doc))
    for other, entry in list(doc['policies'].items()):  # the candidate alone for its kind
        if other != gate.name and gate.kind in (entry.get('learned') or []):
            doc['policies'].pop(other)
    doc['policies'][gate.name] = trial
    for entry in doc['policies'].values():  # relative paths were the catalogue's
        if entry.get('checkpoint') and not Path(entry['checkpoint']).is_absolute():
            entry['checkpoint'] = str((gate.catalogue_path.parent / entry['checkpoint']).resolve())
    path = gate.out / 'candidate_policies.yaml'
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run_sides(gate: _Gate, jobs: int | None) -> tuple:
    """The two benches on the same layouts, and their figures: (candidate, incumbent,
    (candidate's label, incumbent's label))."""
    from harness_learning.adoption import figures

    from harness_bringup import cli

    candidate_catalogue = _candidate_catalogue(gate)
    seeds = gate.seeds
    common = ['--tasks', *gate.tasks, '--layouts', f'random:{len(seeds)}']
    common += ['--seed-base', str(seeds[0]), '--model', 'scripted']
    common += ['--jobs', str(jobs)] if jobs else []
    config_args = ['--config', str(gate.config_file)] if gate.config_file is not None else []
    label = f'candidate {gate.candidate}'
    _say(f'gate: {label} for {", ".join(gate.tasks)} on seeds {seeds[0]}..{seeds[-1]}')
    status = _bench(
        cli,
        [*config_args, 'bench', *common, '--policies', str(candidate_catalogue)]
        + ['--strategies', 'C', '--out', str(gate.out / 'candidate')],
    )
    if status == INTERRUPTED:  # (nothing logged: no decision was made)
        raise KeyboardInterrupt
    if status:
        raise _GateRefusedError(
            f"the candidate's bench failed (exit {status}); see {gate.out / 'candidate'}"
        )
    if gate.incumbent is not None:
        incumbent_label = f'incumbent {gate.incumbent.name} (version {gate.incumbent.version})'
        side = ['--policies', str(gate.catalogue_path), '--strategies', 'C']
    else:
        incumbent_label = 'incumbent: the programs alone'
        side = []
    _say(f'gate: {incumbent_label} on the same layouts')
    status = _bench(
        cli, [*config_args, 'bench', *common, *side, '--out', str(gate.out / 'incumbent')]
    )
    if status == INTERRUPTED:
        raise KeyboardInterrupt
    if status:
        raise _GateRefusedError(
            f"the incumbent's bench failed (exit {status}); see {gate.out / 'incumbent'}"
        )
    mine = figures(label, gate.out / 'candidate')
    theirs = figures(incumbent_label, gate.out / 'incumbent')
    return mine, theirs, (label, incumbent_label)


def _decide(gate: _Gate, mine, theirs, labels: tuple[str, str]) -> int:
    """The decision, and when adopted the weights stored and the catalogue entry written;
    logged beside the catalogue and in the gate's folder either way."""
    from harness_learning.adoption import (
        GateRecord,
        catalogue_entry,
        decide,
        log_decision,
        now,
        replace_entry,
        side_dict,
        store_checkpoint,
    )

    decision = decide(mine, theirs, gate.rule)
    version = None
    seeds = gate.seeds
    if decision.adopt:
        version = (gate.replaced.version if gate.replaced is not None else 0) + 1
        store = _store_folder(gate.catalogue_path, gate.replaced, gate.name, version)
        store_checkpoint(gate.candidate, store)
        said = (
            f'on {len(seeds)} held-out sampled layouts of {", ".join(gate.tasks)} (seeds '
            f'{seeds[0]}..{seeds[-1]}) it finished {mine.finished_runs} of its '
            f'{mine.policy_runs} runs alone and the kit succeeded on {mine.successes}/'
            f'{mine.episodes}; {theirs.line()}.'
        )
        relative = _relative(store, gate.catalogue_path.parent)
        entry = catalogue_entry(
            gate.record, relative, gate.base, version, said, gate.kind, mine.finish_rate or 0.0
        )
        stays = gate.incumbent is not None and gate.replaced is None
        replace_entry(
            gate.catalogue_path, gate.name, entry, before=gate.incumbent.name if stays else None
        )
    log = log_decision(
        gate.catalogue_path,
        GateRecord(
            now(), str(gate.candidate), gate.name, list(gate.tasks), seeds, labels[1],
            decision.adopt, decision.reasons, side_dict(mine), side_dict(theirs), version,
        ),
    )  # fmt: skip
    (gate.out / 'gate.json').write_text(log.read_text().splitlines()[-1] + '\n')
    _say(mine.line())
    _say(theirs.line())
    for reason in decision.reasons:
        _say(f'  {reason}')
    if decision.adopt:
        _say(f'ADOPTED: {gate.name} is version {version} in {gate.catalogue_path}; logged in {log}')
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
