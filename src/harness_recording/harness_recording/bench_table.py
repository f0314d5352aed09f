"""The bench's tables: per task and overall, from the episodes' summary.json files.

The results table holds only what a deterministic simulation repeats exactly (success, score,
calls, decisions, tokens, cost, env steps); wall times go to a separate timing table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from harness_bench.layout import layout_name
from harness_types.reply import REASONS

# Episodes the model service failed (overloaded past the wall budget, unreachable), or that
# could not start where they were sent (a Ray task that failed before its episode ran), were
# not run: they count apart, not as task failures. So do `station_failed` ones: a warm station
# failed under the episode, and the episode did not run again (one that ran again is counted
# by its run on the fresh station). So do `interrupted` ones: the user's Ctrl-C ended them, or
# the bench it ended did not start them.
NOT_RUN = (
    'model_service_failed',
    'policy_service_failed',
    'not_started',
    'station_failed',
    'interrupted',
)


def is_not_run(summary: dict) -> bool:
    """Whether the tables count an episode as not run: its status is one of NOT_RUN, or it
    ended on a set-up problem (`setup_error`: the model server refused the key, or has no such
    model) before its model ever answered."""
    return summary.get('status') in NOT_RUN or bool(summary.get('setup_error'))


RESULT_COLUMNS = (
    'episodes',
    'not_run',
    'success_rate',
    'score',
    'model_calls',
    'decisions',
    'input_tokens',
    'output_tokens',
    'cost_usd',
    'env_steps',
)


def _mean(values: list[float], digits: int) -> float | None:
    """The mean rounded to `digits`; None (n/a in the tables) when nothing ran to average."""
    return round(sum(values) / len(values), digits) if values else None


def _row(all_episodes: list[dict]) -> dict:
    episodes = [e for e in all_episodes if not is_not_run(e)]
    outcomes = [e.get('outcome') or {} for e in episodes]
    decisions = {r: sum((e.get('decisions') or {}).get(r, 0) for e in episodes) for r in REASONS}
    costs = [e.get('cost_usd') for e in episodes]
    return {
        'episodes': len(episodes),
        'not_run': len(all_episodes) - len(episodes),
        'success_rate': _mean([float(bool(o.get('success'))) for o in outcomes], 3),
        'score': _mean([float(o.get('score') or 0.0) for o in outcomes], 3),
        'model_calls': _mean([e.get('model_calls', 0) for e in episodes], 2),
        'decisions': {r: n for r, n in decisions.items() if n},
        'input_tokens': sum((e.get('tokens') or {}).get('input', 0) for e in episodes),
        'output_tokens': sum((e.get('tokens') or {}).get('output', 0) for e in episodes),
        'cost_usd': None if any(c is None for c in costs) else round(sum(costs), 6),
        'env_steps': _mean([e.get('env_steps') or 0 for e in episodes], 1),
    }


def _rung(episodes: list[dict]) -> dict:
    """A rung's row of the ladder table: the results row and the characters the model was
    sent (what a baseline without a model can count instead of tokens)."""
    ran = [e for e in episodes if not is_not_run(e)]
    characters = sum(e.get('request_characters', 0) for e in ran)
    return {**_row(episodes), 'request_characters': characters}


def _detail(summary: dict) -> str:
    """An episode's detail in the tables: the outcome's (what became of the task), or, for an
    episode not run or that ended in an error, first why (the outcome's words then follow)."""
    said = (summary.get('outcome') or {}).get('detail') or ''
    why = summary.get('detail') or ''
    if why and (is_not_run(summary) or summary.get('status') == 'error'):
        return f'{why} ({said})' if said and said != why else why
    return said or why


def _timing(episodes: list[dict]) -> dict:
    """The wall time of the episodes that ran (one not run took none of its own)."""
    walls = [e.get('wall_seconds') or 0.0 for e in episodes if not is_not_run(e)]
    return {
        'wall_seconds_mean': _mean(walls, 2),
        'wall_seconds_max': round(max(walls), 2) if walls else None,
    }


def _strategy(summary: dict) -> str | None:
    """The strategy an episode with policies chose ('A', 'B', 'C'; 'none' when it chose
    none); None for an episode without policies."""
    strategy = summary.get('strategy')
    if not isinstance(strategy, dict) or not strategy.get('policies'):
        return None
    return strategy.get('choice') or 'none'


DIVISION = {
    'A': 'policy alone (A)',
    'B': 'programs alone (B)',
    'C': 'policy, then programs (C)',
    '': "agent's choice",
}


def _division(summary: dict) -> str | None:
    """The division-of-labour column of an episode with policies: its forced strategy (bench
    --strategies), or the agent's choice; None without policies."""
    strategy = summary.get('strategy')
    forced = summary.get('forced_strategy')  # an episode that did not run says it here
    if isinstance(strategy, dict) and strategy.get('policies'):
        forced = strategy.get('forced') or ''
    return DIVISION.get(forced) if forced is not None else None


def _division_table(summaries: list[dict]) -> dict:
    """{column: {task: row, 'overall': row}}, when some episode's strategy was forced."""
    by: dict[str, dict[str, list[dict]]] = {}
    for s in summaries:
        column = _division(s)
        if column is not None:
            by.setdefault(column, {}).setdefault(s['task'], []).append(s)
    if not any(c != DIVISION[''] for c in by):
        return {}
    return {
        column: {task: _row(eps) for task, eps in tasks.items()}
        | {'overall': _row([e for eps in tasks.values() for e in eps])}
        for column, tasks in sorted(by.items(), key=lambda kv: list(DIVISION.values()).index(kv[0]))
    }


def _category(task: str) -> str:
    """The bench category of `task` (harness_bench.task.CATEGORIES), '' for an unknown task."""
    from harness_bench.tasks import TASKS

    return TASKS[task].category if task in TASKS else ''


def _grouped(summaries: list[dict], key: Callable[[dict], str], order: list[str]) -> dict:
    """{group: row} of the summaries grouped by `key`, in `order` (then any other group)."""
    by: dict[str, list[dict]] = {}
    for s in summaries:
        by.setdefault(key(s), []).append(s)
    names = [k for k in order if k in by] + sorted(k for k in by if k not in order)
    return {k: _row(by[k]) for k in names}


def bench_tables(summaries: Iterable[dict]) -> dict:
    """{'model', 'tasks': {task: row}, 'overall': row, 'categories': {category: row},
    'axes': {randomisation axes: row}, 'strategies': {strategy: row} (episodes with policies),
    'episodes': [...], 'timing': {...}}."""
    from harness_bench.randomization import AXES
    from harness_bench.task import CATEGORIES

    summaries = list(summaries)
    by_task: dict[str, list[dict]] = {}
    by_strategy: dict[str, list[dict]] = {}
    by_interface: dict[str, list[dict]] = {}
    for s in summaries:
        by_task.setdefault(s['task'], []).append(s)
        by_interface.setdefault(s.get('interface') or 'programs', []).append(s)
        if _strategy(s) is not None:
            by_strategy.setdefault(_strategy(s), []).append(s)
    models = sorted({str(s.get('model')) for s in summaries})
    return {
        'model': ', '.join(models),
        'baseline': any(s.get('baseline') for s in summaries),
        'tasks': {task: _row(eps) for task, eps in by_task.items()},
        'overall': _row(summaries),
        # RoboDojo's categories, and the scene randomisation each episode ran with ('none':
        # only the layout varied; 'all': every axis at once)
        'categories': _grouped(summaries, lambda s: _category(s['task']), list(CATEGORIES)),
        'axes': _grouped(summaries, lambda s: s.get('randomize') or 'none', ['none', *AXES, 'all']),
        'strategies': {k: _row(by_strategy[k]) for k in sorted(by_strategy)},
        # The division of labour (bench --policies --strategies A,B,rule): the same layouts
        # with the policy alone, the programs alone and the agent's choice.
        'division': _division_table(summaries),
        # The interface ladder: the same episodes on each rung (bench --interface a,b,...).
        'ladder': {k: _rung(v) for k, v in by_interface.items()} if len(by_interface) > 1 else {},
        'episodes': [
            {
                'task': s['task'],
                'interface': s.get('interface') or 'programs',
                'layout': s['layout'],
                'seed': s.get('seed'),
                'randomize': s.get('randomize') or 'none',
                'status': s.get('status'),
                'success': bool((s.get('outcome') or {}).get('success')),
                'score': (s.get('outcome') or {}).get('score'),
                'detail': _detail(s),
                'model_calls': s.get('model_calls'),
                'env_steps': s.get('env_steps'),
                'strategy': _strategy(s),
            }
            for s in summaries
        ],
        'timing': {
            'tasks': {task: _timing(eps) for task, eps in by_task.items()},
            'overall': _timing(summaries),
            # what happened to the machinery, not to the episodes (it varies as timing does)
            'run_again_after_a_station_failed': sorted(
                _run_name(s) for s in summaries if s.get('retry_of')
            ),
            'bags_incomplete': sorted(_run_name(s) for s in summaries if s.get('bag_incomplete')),
            'calls_of_runs_not_counted': _calls_not_counted(summaries),
        },
    }


def _calls_not_counted(summaries: list[dict]) -> dict:
    """The model and verifier calls (and their cost) of the runs the results leave out: those
    not run (`NOT_RUN`) and the first runs of episodes run again after their station failed
    (each retry's `retry_of_usage`); with a paid model, part of the bill. {} when none made a
    call."""
    spent = [s for s in summaries if is_not_run(s)]
    spent += [s['retry_of_usage'] for s in summaries if s.get('retry_of_usage')]
    spent = [u for u in spent if u.get('model_calls') or u.get('verifier_calls')]
    if not spent:
        return {}
    costs = [u.get('cost_usd') for u in spent]
    return {
        'runs': len(spent),
        'model_calls': sum(u.get('model_calls') or 0 for u in spent),
        'verifier_calls': sum(u.get('verifier_calls') or 0 for u in spent),
        'input_tokens': sum((u.get('tokens') or {}).get('input', 0) for u in spent),
        'output_tokens': sum((u.get('tokens') or {}).get('output', 0) for u in spent),
        'cost_usd': None if any(c is None for c in costs) else round(sum(costs), 6),
    }


def _run_name(summary: dict) -> str:
    """An episode's run folder's name (its task, layout and seed where it has none)."""
    run = summary.get('run_folder')
    if run:
        return Path(run).name
    return f'{summary.get("task")}-l{summary.get("layout")}-s{summary.get("seed")}'


def wall_accounting(summaries: list[dict], bench_wall_s: float) -> dict:
    """Where a bench's wall time went, and the bench's wall outside every episode's command
    (each [started_at, started_at + total] joined, a retried episode's first run's too:
    starting episodes, the tables).

    `summed_by_phase_seconds`: each part summed over the episodes, by level; within a level
    the parts add up to the part of the level above that they name, never across levels:
    - `command`: each episode's `command_seconds` (a warm station's start until it read the
      episode's request, where an episode waited for one; the episode's process or its turn
      on a station; what came after);
    - `episode_process`: that process's own phases (its start and checks, its graph and
      episode, the dataset and report it made, a new station's graph start) and `rest`, what
      they leave of it (its exit, or a station's answer);
    - `episode`: the episode's phases (`phases_seconds`, within `graph_and_episode`);
    - `finished_by_bench`: the dataset and report the bench made beside the next episodes;
    - `retried`: the commands of the first runs of retried episodes (their station failed)."""
    levels: dict[str, dict[str, float]] = {
        'command': {},
        'episode_process': {},
        'episode': {},
        'finished_by_bench': {},
        'retried': {},
    }
    intervals = []

    def add(level: str, part: str, seconds) -> None:
        if seconds is not None:
            levels[level][part] = levels[level].get(part, 0.0) + float(seconds)

    for s in summaries:
        command = s.get('command_seconds') or {}
        for part in ('station_start', 'episode_process', 'after_episode_process'):
            add('command', part, command.get(part))
        for part, seconds in (s.get('episode_process_seconds') or {}).items():
            add('episode_process', part, seconds)
        add('episode_process', 'rest', command.get('episode_process_exit'))
        for part, seconds in (s.get('phases_seconds') or {}).items():
            add('episode', part, seconds)
        for part, seconds in (s.get('finished_by_bench_seconds') or {}).items():
            add('finished_by_bench', part, seconds)
        first = s.get('retry_of_command_seconds') or {}
        add('retried', 'first_runs', first.get('total'))
        for spent in (command, first):
            start, total = spent.get('started_at'), spent.get('total')
            if start is None:
                continue
            end = spent.get('ended_at') if total is None else float(start) + float(total)
            if end is not None:
                intervals.append((float(start), float(end)))
    covered, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            covered += b - a
            end = b
        elif b > end:
            covered += b - end
            end = b
    return {
        'bench_wall_seconds': round(bench_wall_s, 2),
        'within_episode_commands_seconds': round(covered, 2),
        'outside_every_episode_command_seconds': round(max(0.0, bench_wall_s - covered), 2),
        'summed_by_phase_seconds': {
            level: {k: round(v, 2) for k, v in sorted(parts.items())}
            for level, parts in levels.items()
        },
    }


def cell_text(value) -> str:
    """A table cell's text: a dict as `key value, ...`, None as n/a."""
    if isinstance(value, dict):
        return ', '.join(f'{k} {v}' for k, v in value.items()) or '-'
    if value is None:
        return 'n/a'
    return str(value)


KEPT_FROM_STARTING = 'not started: '  # the detail of an episode an interrupt or a stop kept


def listed_episodes(tables: dict) -> tuple[list[dict], int]:
    """The episodes bench.md and bench.html list, and how many they leave out: those an
    interrupt or a set-up problem kept from starting (an interrupted random:100000 bench
    listed 99,994 of them; bench.json keeps each)."""
    episodes = tables.get('episodes', [])
    listed = [e for e in episodes if not str(e.get('detail') or '').startswith(KEPT_FROM_STARTING)]
    return listed, len(episodes) - len(listed)


def kept_from_starting_note(count: int) -> str:
    """The line under an episodes table that leaves `count` out ('' for none)."""
    if not count:
        return ''
    return (
        f'{count} more episodes did not start (the bench was interrupted or stopped): not '
        'listed here; bench.json has each.'
    )


def markdown(tables: dict) -> str:
    """The tables as Markdown: results per task and overall, episodes, timing."""
    title = f'# Bench: model {tables["model"]}'
    if tables['baseline']:
        title += ' (scripted baseline: reference programs, no model)'
    header = '| task | ' + ' | '.join(c.replace('_', ' ') for c in RESULT_COLUMNS) + ' |'
    lines = [title, '']
    stopped = interrupted_note(tables)
    if stopped:
        lines += [stopped, '']
    lines += [header, '|' + '---|' * (len(RESULT_COLUMNS) + 1)]
    rows = list(tables['tasks'].items()) + [('**overall**', tables['overall'])]
    for task, row in rows:
        lines.append(f'| {task} | ' + ' | '.join(cell_text(row[c]) for c in RESULT_COLUMNS) + ' |')
    for key, title, column in (
        ('categories', 'By category', 'category'),
        ('axes', 'By randomisation axis', 'randomised'),
    ):
        if tables.get(key):
            lines += ['', f'## {title}', '', header.replace('task', column, 1)]
            lines.append('|' + '---|' * (len(RESULT_COLUMNS) + 1))
            for name, row in tables[key].items():
                lines.append(
                    f'| {name} | ' + ' | '.join(cell_text(row[c]) for c in RESULT_COLUMNS) + ' |'
                )
    if tables.get('expert_check'):
        lines += [
            '',
            '## Expert check (a sampled layout is kept only when the reference program solves it)',
            '',
            '| task | kept | dropped | why |',
            '|---|---|---|---|',
        ]
        for task, check in tables['expert_check'].items():
            why = '; '.join(f'seed {d["seed"]}: {d["why"]}' for d in check['dropped']) or '-'
            lines.append(f'| {task} | {len(check["kept"])} | {len(check["dropped"])} | {why} |')
    if tables.get('strategies'):
        lines += [
            '',
            '## By strategy (episodes with policies)',
            '',
            header.replace('task', 'strategy', 1),
        ]
        lines.append('|' + '---|' * (len(RESULT_COLUMNS) + 1))
        for strategy, row in tables['strategies'].items():
            lines.append(
                f'| {strategy} | ' + ' | '.join(cell_text(row[c]) for c in RESULT_COLUMNS) + ' |'
            )
    if tables.get('division'):
        lines += [
            '',
            '## Division of labour (the same layouts, each way)',
            '',
            '| task | way | episodes | not run | success rate | score | model calls | env steps |',
            '|---|---|---|---|---|---|---|---|',
        ]
        for column, rows in tables['division'].items():
            for task, row in rows.items():
                name = '**overall**' if task == 'overall' else task
                numbers = ('episodes', 'not_run', 'success_rate', 'score', 'model_calls')
                lines.append(
                    f'| {name} | {column} | '
                    + ' | '.join(cell_text(row[c]) for c in (*numbers, 'env_steps'))
                    + ' |'
                )
    if tables.get('ladder'):
        lines += [
            '',
            '## Interface ladder (the same episodes on each rung)',
            '',
            '| interface | episodes | success rate | model calls | input tokens | request '
            'characters | decisions |',
            '|---|---|---|---|---|---|---|',
        ]
        for interface, row in tables['ladder'].items():
            lines.append(
                f'| {interface} | {row["episodes"]} | {cell_text(row["success_rate"])} | '
                f'{cell_text(row["model_calls"])} | {row["input_tokens"]} | '
                f'{row["request_characters"]} | {cell_text(row["decisions"])} |'
            )
    ladder = bool(tables.get('ladder'))
    lines += [
        '',
        '| task | '
        + ('interface | ' if ladder else '')
        + 'layout | seed | randomised | status | success | score | calls | env steps | detail |',
    ]
    lines.append('|---|---|---|---|---|---|---|---|---|---|' + ('---|' if ladder else ''))
    listed, left_out = listed_episodes(tables)
    for e in listed:
        rung = f'{e["interface"]} | ' if ladder else ''
        lines.append(
            f'| {e["task"]} | {rung}{layout_name(e["layout"])} | {e["seed"]} | '
            f'{e.get("randomize", "none")} | {e["status"]} '
            f'| {"yes" if e["success"] else "no"} '
            f'| {cell_text(e["score"])} | {cell_text(e["model_calls"])} '
            f'| {cell_text(e["env_steps"])} '
            f'| {e["detail"]} |'
        )
    if left_out:
        lines += ['', kept_from_starting_note(left_out)]
    lines += ['', '## Timing (wall clock; varies from run to run)', '']
    lines += ['| task | wall s mean | wall s max |', '|---|---|---|']
    timing = list(tables['timing']['tasks'].items()) + [
        ('**overall**', tables['timing']['overall'])
    ]
    for task, t in timing:
        lines.append(
            f'| {task} | {cell_text(t["wall_seconds_mean"])} | {cell_text(t["wall_seconds_max"])} |'
        )
    for note in timing_notes(tables):
        lines += ['', note]
    return '\n'.join(lines) + '\n'


def interrupted_note(tables: dict) -> str:
    """What the tables of a bench that ended early hold: interrupted, or stopped at a set-up
    problem ('' for a bench that ran to its end)."""
    interrupted, stopped = tables.get('interrupted'), tables.get('stopped')
    if interrupted:
        return (
            f'Interrupted: {interrupted["ran"]} of its {interrupted["episodes"]} episodes ran, '
            'in part or whole; those the interrupt ended or kept from starting are not run.'
        )
    if stopped:
        return (
            f'Stopped at a set-up problem every episode would meet ({stopped["why"]}): '
            f'{stopped["ran"]} of its {stopped["episodes"]} episodes ran; the others did not '
            'start and are not run.'
        )
    return ''


def timing_notes(tables: dict) -> list[str]:
    """The sentences under the timing table: runs made again after their station failed,
    incomplete bags, and what the runs the results leave out cost."""
    notes = []
    for key, said in (
        ('run_again_after_a_station_failed', 'Run again on a fresh station after theirs failed'),
        ('bags_incomplete', "Bags incomplete (the summary's bag_error says why)"),
    ):
        names = tables['timing'].get(key) or []
        if names:
            notes.append(f'{said}: {len(names)} ({", ".join(names)}).')
    spent = tables['timing'].get('calls_of_runs_not_counted')
    if spent:
        cost = 'no price known' if spent['cost_usd'] is None else f'{spent["cost_usd"]} USD'
        notes.append(
            f'Calls of runs the results leave out (not run, or run again after their station '
            f'failed): {spent["runs"]} runs, {spent["model_calls"]} model calls, '
            f'{spent["verifier_calls"]} verifier calls, {spent["input_tokens"]} input and '
            f'{spent["output_tokens"]} output tokens, {cost}.'
        )
    return notes
