"""The verifier's report card: per task and tier, how its verdicts on the task's goal compare
with the ground truth (tier 4, the bench's outcome check) over the bench's judgements. Every
episode gives two: after the reset (the goal not yet reached, a negative) and at the end. A
tier that could not tell (no verdict) counts as `abstained`, not as an error. Tier 3 (the VLM)
counts only where a model judged beside tier 2; the scripted baseline has none. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from harness_bench.verifier import SATISFIED, TIERS, VIOLATED

ROWS = ('1', '2', '3', 'combined')
COLUMNS = ('judged', 'true_pos', 'true_neg', 'false_pos', 'false_neg', 'abstained')


def _verdicts(verdict: dict) -> dict[str, str | None]:
    tiers = dict(verdict.get('tiers') or {})
    if tiers.get('2') is None:
        tiers.pop('3', None)  # a VLM's verdict counts only beside a tier-2 one
    tiers['combined'] = verdict.get('verdict')
    return tiers


def report_card(summaries: Iterable[dict]) -> dict:
    """{task: {tier: counts}} and the totals, from episodes' summaries (goal_verdicts)."""
    cards: dict[str, dict[str, dict[str, int]]] = {}
    for s in summaries:
        task = s.get('task', '?')
        card = cards.setdefault(task, {t: dict.fromkeys(COLUMNS, 0) for t in ROWS})
        for verdict in (s.get('goal_verdicts') or {}).values():
            truth = verdict.get('ground_truth')
            if truth is None:
                continue
            for tier, said in _verdicts(verdict).items():
                if tier not in card:
                    continue
                row = card[tier]
                row['judged'] += 1
                if said == SATISFIED:
                    row['true_pos' if truth else 'false_pos'] += 1
                elif said == VIOLATED:
                    row['false_neg' if truth else 'true_neg'] += 1
                else:
                    row['abstained'] += 1
    total = {t: dict.fromkeys(COLUMNS, 0) for t in ROWS}
    for card in cards.values():
        for tier, row in card.items():
            for k, v in row.items():
                total[tier][k] += v
    judged_3 = total['3']['judged'] - total['3']['abstained']
    note = (
        f'{judged_3} verdicts, each counted in the combined verdict only beside a tier-2 one '
        'and only for the tasks of the card driver.tier3_report_card names'
        if judged_3
        else 'not judged: no VLM verdict in these episodes (driver.goal_verifier_vlm, a model)'
    )
    return {'tasks': cards, 'total': total, 'tier_3': note}


def tier3_tasks(card_path: str) -> set[str]:
    """The tasks a report card (report_card.json) judged at tier 3: those whose VLM verdicts
    may count (driver.tier3_report_card); none for '' or a card that cannot be read."""
    import json
    from pathlib import Path

    if not card_path:
        return set()
    try:
        card = json.loads(Path(card_path).read_text())
    except (OSError, ValueError):
        return set()
    tasks = card.get('tasks') if isinstance(card, dict) else None
    if not isinstance(tasks, dict):
        return set()
    return {
        task
        for task, rows in tasks.items()
        if isinstance(rows, dict)
        and isinstance(rows.get('3'), dict)
        and rows['3'].get('judged', 0) - rows['3'].get('abstained', 0) > 0
    }


def _rate(n: int, d: int) -> str:
    return f'{n / d:.2f}' if d else '-'


def markdown(card: dict) -> str:
    """report_card.md: one table per tier row, tasks down the side."""
    lines = [
        '# Verifier report card',
        '',
        "Verdicts on each task's goal against the ground truth (tier 4), two judgements per "
        'episode (after the reset and at the end). FP rate: satisfied when the goal was not '
        'reached, over the negatives judged; FN rate: violated when it was, over the positives. '
        f'Tier 3 ({TIERS[3]}): {card["tier_3"]}.',
        '',
        '| task | tier | judged | TP | TN | FP | FN | abstained | FP rate | FN rate |',
        '|---|---|---|---|---|---|---|---|---|---|',
    ]
    for task, rows in [*sorted(card['tasks'].items()), ('all', card['total'])]:
        for tier in ROWS:
            r = rows[tier]
            negatives = r['true_neg'] + r['false_pos']
            positives = r['true_pos'] + r['false_neg']
            name = tier if tier == 'combined' else f'{tier} ({TIERS[int(tier)]})'
            lines.append(
                f'| {task} | {name} | {r["judged"]} | {r["true_pos"]} | {r["true_neg"]} | '
                f'{r["false_pos"]} | {r["false_neg"]} | {r["abstained"]} | '
                f'{_rate(r["false_pos"], negatives)} | {_rate(r["false_neg"], positives)} |'
            )
    return '\n'.join(lines) + '\n'
