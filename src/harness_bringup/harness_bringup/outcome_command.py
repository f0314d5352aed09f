"""`harness outcome-model train SOURCE... --out MODEL`: the outcome model (harness_driver.
outcome_model) fitted on the recorded trials under SOURCEs, with its report card on the trials
it held out."""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path

from harness_types.whole_file import write_whole

from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say

REPORT_CARD = 'outcome_report_card.md'  # beside the model file


def add_parser(sub) -> None:
    outcome = sub.add_parser(
        'outcome-model',
        help='the outcome model in shadow mode: `harness outcome-model train`',
        description="Train the outcome model (it reads out a trial's outcome and a per-tick "
        'surprise; in shadow mode it never acts) on recorded run folders.',
    )
    commands = outcome.add_subparsers(dest='outcome_command', required=True, metavar='COMMAND')
    train = commands.add_parser(
        'train',
        help='fit it on the run folders under SOURCEs',
        description='Fit the outcome model on every episode run folder under SOURCEs (benches, '
        "demonstration collections, gates): a logistic regression of the task's success on "
        "each episode trial's trajectory features and a linear dynamics model for the per-tick "
        'surprise, in numpy. A share of the sampled layouts (--held-out) is kept out of '
        'training, whatever ran on them, and its report card (false positives and negatives '
        "against the ground truth) is written to MODEL's folder as outcome_report_card.md. "
        'Enable it with driver.outcome_model: MODEL.',
    )
    train.add_argument('sources', nargs='+', metavar='SOURCE', help='folders of run folders')
    train.add_argument('--out', required=True, metavar='MODEL', help='the model file (JSON)')
    train.add_argument(
        '--held-out',
        type=float,
        default=0.25,
        help='the share of layouts held out for the report card (default 0.25)',
    )
    train.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    from harness_driver.outcome_model import (
        OutcomeModelError,
        fit,
        held_out,
        report_card,
        report_markdown,
        samples_of,
    )
    from harness_recording.run_folder import found_in_runs

    if not 0.0 < args.held_out < 1.0:
        return _fail(f'--held-out must be between 0 and 1, not {args.held_out}')
    out = Path(args.out)
    report = out.parent / REPORT_CARD
    if out.is_dir():
        return _fail(f'--out {out} is a folder: name the model file')
    if out.name == REPORT_CARD:  # (the model, then its card, would be one file)
        return _fail(f"--out {out} is the report card's name: name the model file otherwise")
    if report.is_dir():
        return _fail(f'{report} (the report card, beside --out) is a folder')
    runs = []
    for source in args.sources:
        if not Path(source).is_dir():
            return _fail(f'{source} is not a folder')
        inside = Path(source).resolve()
        if inside == out.parent.resolve() or inside in out.parent.resolve().parents:
            return _fail(f'--out {out} is inside the source {source}: the model goes elsewhere')
        runs += [
            p.parent
            for p in found_in_runs(Path(source), 'events.jsonl')
            if (p.parent / 'summary.json').is_file()
        ]
    samples, skipped = [], 0
    for run in dict.fromkeys(r.resolve() for r in runs):
        try:
            samples += [s for s in samples_of(run) if s.success is not None]
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            IndexError,
            AttributeError,
            EOFError,
            zipfile.BadZipFile,
        ):
            skipped += 1  # a run folder without its ticks (or broken by hand): nothing to learn
    kept = [s for s in samples if not held_out(s.layout, s.run, args.held_out)]
    test = [s for s in samples if held_out(s.layout, s.run, args.held_out)]
    _say(
        f'{len(samples)} trials with their outcome from {len(runs)} run folders '
        f'({skipped} unreadable): {len(kept)} to train on, {len(test)} held out'
    )
    try:
        model = fit(kept)
    except OutcomeModelError as exc:
        return _fail(str(exc))
    card = report_card(model, test)
    model.held_out = {'trials': len(test), 'share': args.held_out, 'card': card}
    title = (
        f'Outcome model: {len(test)} held-out trials ({model.trained["trials"]} trained on, '
        f'{model.trained["successes"]} of them successes)'
    )
    try:  # each whole or not at all (an old model is not replaced by half a new one)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_whole(out, (json.dumps(model.to_json()) + '\n').encode())
        text = '# Outcome model report card\n\n' + report_markdown(card, title)
        write_whole(report, text.encode())
    except OSError as exc:
        return _fail(f'--out {out}: {exc.strerror or exc}')
    total = card.get('all', {})
    _say(
        f'held out: {sum(total.values())} trials, TP {total.get("true_pos", 0)} TN '
        f'{total.get("true_neg", 0)} FP {total.get("false_pos", 0)} FN '
        f'{total.get("false_neg", 0)}; model {out}, report card {report}'
    )
    return 0
