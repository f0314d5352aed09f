"""The scripted baseline's program with policies: the strategy chosen by the rule the prompt
gives the model (the catalogue's `strategy_for`: A for a kind a policy learned and usually
finishes, C for one it learned otherwise, B for the rest), then the cells of that strategy.

A: start, run the policy from the untouched start pose, finish. C: start, run the policy for
at most `policy_seconds` (the programs need the rest of the episode's steps), then home and the
task's reference program. B: start, then the reference program.
"""

from __future__ import annotations

from harness_policy.catalog import Catalog


def strategy_cells(
    kind: str,
    instruction: str,
    reference: list[str],
    catalog: Catalog,
    forced: str = '',
    policy_seconds: float = 60.0,
) -> tuple[str, list[str]]:
    """(strategy, cells) of the scripted baseline for a task of `kind`; `forced` ('A', 'B' or
    'C') instead of the rule; `policy_seconds` bounds C's policy run (simulated). ValueError: A
    or C forced for a kind no policy learned."""
    strategy = forced or catalog.strategy_for(kind, instruction)
    if strategy in ('A', 'C') and catalog.for_kind(kind, instruction) is None:
        raise ValueError(
            f'strategy {strategy} needs a policy that learned {kind!r}; the catalogue has none '
            f'(policies learned: {", ".join(catalog.kinds()) or "nothing"})'
        )
    start = f'print(start({strategy!r}, {kind!r}, {instruction!r}))\n'
    if strategy == 'B':
        return strategy, [f'# %% strategy B: programs only\n{start}{reference[0]}', *reference[1:]]
    policy = catalog.for_kind(kind, instruction)
    run = f'run = run_policy({policy.name!r}, {instruction!r})\nprint(run)\nprint(scene())\n'
    if strategy == 'A':
        return strategy, [
            f'# %% strategy A: {policy.name} does the task from the start pose\n{start}{run}',
            "# %% the policy's run ended; the task is done\nfinish('the policy did the task')\n",
        ]
    # C: whatever the policy's run ends with, the programs take over (a handler absorbs it).
    bounded = run.replace(')\n', f', max_seconds={policy_seconds:g})\n', 1)
    return strategy, [
        f'# %% strategy C: {policy.name} first\n{start}'
        "on('*', lambda execution: True)\n"
        f'{bounded}'
        "on('*', None)\n",
        f'# %% programs finish what the policy left, from the home pose\nhome()\n{reference[0]}',
        *reference[1:],
    ]
