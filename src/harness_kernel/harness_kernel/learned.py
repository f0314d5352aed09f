"""The learned half of the program API, kept by the kernel: the policy catalogue, the episode's
strategy (`start(strategy, kind)`), and what `run_policy` is sent.

With policies enabled (a catalogue is configured), the strategy comes first: every execution
that commands the arms before `start` is refused with SKILL_ERROR, so strategy A's policy
always starts from the untouched start pose. Without a catalogue the learned names say that
policies are not enabled and nothing is refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from harness_policy.catalog import STRATEGIES, Catalog, PolicySpec

# The policy-to-end run's time bound: the episode's step limit (the worker's) ends it first.
POLICY_TO_END_SECONDS = 3600.0
SHADOW_HORIZON_S = 20.0  # shadow mode predicts at most this far (the worker waits meanwhile)
PREDICTED_VIEWS = ('cam_head',)  # the views of a predicted end state locate() reads
MAX_INSTRUCTION = 2000  # characters of an instruction sent to a policy


@dataclass(frozen=True)
class Strategy:
    """What start() chose: the strategy letter, the task kind, and the policy that learned
    it (None for B)."""

    letter: str
    kind: str
    policy: str | None


class LearnedHalf:
    """`catalog` None: policies are not enabled in this episode."""

    def __init__(self, catalog: Catalog | None) -> None:
        self.catalog = catalog
        self.strategy: Strategy | None = None
        self.instruction = ''  # the last instruction a policy run was given
        self.executed = False  # an execution ran since the strategy was chosen
        self.handed_over = False  # B was changed to A or C (once, before anything moved)

    @property
    def enabled(self) -> bool:
        return self.catalog is not None

    def _require(self, name: str) -> Catalog:
        if self.catalog is None:
            raise RuntimeError(
                f'{name}(): policies are not enabled in this episode (kernel.policies names no '
                'catalogue); solve the task with programs'
            )
        return self.catalog

    def list_policies(self) -> str:
        return self._require('list_policies').text()

    def start(self, strategy: str, kind: str, instruction: str = '') -> str:
        catalog = self._require('start')
        letter = str(strategy).strip().upper()
        if letter not in STRATEGIES:
            raise ValueError(f'strategy must be one of A, B, C, not {strategy!r}')
        kind = str(kind).strip()
        handing_over = False
        if self.strategy is not None:
            s = self.strategy
            # After B, the task may still be handed to a policy once, from the untouched start
            # pose: when the program's own tools failed before anything moved.
            handing_over = (
                s.letter == 'B' and letter in 'AC' and not self.executed and not self.handed_over
            )
            if (s.letter, s.kind) != (letter, kind) and not handing_over:
                raise RuntimeError(
                    f'start() was already called: strategy {s.letter} for {s.kind!r}; the '
                    'strategy is chosen once per episode'
                    + (
                        ' (after B, one hand-over to A or C is allowed only before anything '
                        'has moved the arms)'
                        if s.letter == 'B' and letter in 'AC'
                        else ''
                    )
                )
        if not kind:
            raise ValueError('start() needs the task kind (e.g. one of the kinds a policy learned)')
        instruction = str(instruction).strip()
        if self.strategy is not None and not handing_over:  # the same choice: what it chose
            return self._chosen(self.strategy, catalog, instruction)
        policy: PolicySpec | None = catalog.for_kind(kind, instruction)
        if letter in 'AC' and policy is None:
            if instruction and catalog.for_kind(kind) is not None:
                raise ValueError(
                    f'no policy learned {kind!r} with the instruction {instruction[:200]!r} '
                    f'(the policies of {kind!r} learned only their listed instructions: see '
                    "list_policies()); use start('B', kind) and programs"
                )
            raise ValueError(
                f'no policy learned {kind!r} (learned kinds: {", ".join(catalog.kinds())}); '
                "use start('B', kind) and programs"
            )
        self.strategy = Strategy(letter, kind, policy.name if letter in 'AC' else None)
        self.handed_over = handing_over
        return self._chosen(self.strategy, catalog, instruction)

    @staticmethod
    def _chosen(strategy: Strategy, catalog: Catalog, instruction: str) -> str:
        """What start() answers for the chosen `strategy`."""
        letter, kind = strategy.letter, strategy.kind
        if strategy.policy is None:
            return f'strategy B for {kind!r}: programs only'
        policy = catalog.get(strategy.policy)
        only = (
            ' It learned only the instructions '
            + ', '.join(repr(i) for i in policy.instructions)
            + '.'
            if policy.instructions and instruction not in policy.instructions
            else ''
        )
        return (
            f'strategy {letter} for {kind!r}: {STRATEGIES[letter]}. Call '
            f'run_policy({policy.name!r}, instruction) to let the policy act.{only}'
        )

    def refusal(self, skill: str) -> str:
        """Why an execution of `skill` may not run now ('' when it may)."""
        if self.catalog is not None and self.strategy is None:
            return (
                f'{skill}: strategy first: with policies enabled, call start(strategy, kind, '
                'instruction) before anything moves the arms (A: the policy does the task from '
                'the untouched start pose; C: the policy first, then programs; B: programs only)'
            )
        if skill == 'run_policy' and self.strategy is not None and self.strategy.letter == 'B':
            return (
                'run_policy: the strategy is B, programs only; before anything has moved the '
                "arms, start('A' or 'C', kind) may still hand the task to a policy once"
            )
        if self.strategy is not None:
            self.executed = True
        return ''

    def entry(self, name: str, caller: str = 'predict_future') -> dict:
        """The catalogue's entry of policy `name` as plain values."""
        spec = self._require(caller).get(str(name))
        entry = asdict(spec)
        for key in ('cameras', 'learned', 'finishes', 'instructions'):
            entry[key] = list(entry[key])
        entry['observation_keys'] = dict(entry['observation_keys'])
        return entry

    def policy_arguments(self, name: str, instruction: str, to_end: bool = False) -> dict:
        """What run_policy's goal is made of: the catalogue's entry of `name`."""
        entry = self.entry(name, 'run_policy')
        instruction = str(instruction).strip()
        if not instruction:
            raise ValueError('run_policy() needs an instruction (the task in words)')
        if len(instruction) > MAX_INSTRUCTION:
            raise ValueError(
                f'run_policy(): an instruction of at most {MAX_INSTRUCTION} characters, '
                f'not {len(instruction)}'
            )
        self.instruction = instruction
        return {'entry': entry, 'to_end': to_end}
