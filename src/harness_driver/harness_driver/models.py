"""Model clients: the real Anthropic Messages API client and the scripted baseline."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

SCRIPTED = 'scripted'


class ModelError(RuntimeError):
    """The model could not be asked. `setup` is True when the cause is the set-up (no key, an
    unreachable server, a refused key): the command reports it in one line and exits 2."""

    def __init__(self, message: str, setup: bool = False) -> None:
        super().__init__(message)
        self.setup = setup


@dataclass(frozen=True)
class Decision:
    """Why the model is asked, and what the scripted model needs to know about the last turn."""

    reason: str  # start | escalation | error | program_end | verify | format
    call: int  # 1-based
    cell_status: str = ''
    event: str = ''


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: list[dict]
    max_tokens: int
    decision: Decision


@dataclass(frozen=True)
class ModelReply:
    text: str
    input_tokens: int
    output_tokens: int


class ModelClient(Protocol):
    name: str

    def complete(self, request: ModelRequest) -> ModelReply: ...


class AnthropicModel:
    """Claude through the `anthropic` SDK. The key comes from ANTHROPIC_API_KEY and the server
    from ANTHROPIC_BASE_URL (default: Anthropic's API)."""

    def __init__(self, name: str, timeout: float = 120.0, retries: int = 2) -> None:
        import anthropic

        key = os.environ.get('ANTHROPIC_API_KEY', '')
        if not key:
            raise ModelError(
                f'model {name!r} needs ANTHROPIC_API_KEY in the environment '
                f'(or use --model {SCRIPTED} for the baseline without a model)',
                setup=True,
            )
        self.name = name
        self.base_url = os.environ.get('ANTHROPIC_BASE_URL') or 'https://api.anthropic.com'
        self._anthropic = anthropic
        self.client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=retries
        )

    def complete(self, request: ModelRequest) -> ModelReply:
        a = self._anthropic
        try:
            response = self.client.messages.create(
                model=self.name,
                max_tokens=request.max_tokens,
                system=request.system,
                messages=request.messages,
            )
        except a.APIConnectionError as exc:
            raise ModelError(
                f'cannot reach the model server at {self.base_url}: {exc}', setup=True
            ) from None
        except a.AuthenticationError as exc:
            raise ModelError(
                f'the model server refused the key: {exc.message}', setup=True
            ) from None
        except a.NotFoundError as exc:
            raise ModelError(f'model {self.name!r} not found: {exc.message}', setup=True) from None
        except a.APIStatusError as exc:
            raise ModelError(
                f'the model server answered {exc.status_code}: {exc.message}'
            ) from None
        text = ''.join(b.text for b in response.content if getattr(b, 'type', '') == 'text')
        usage = response.usage
        return ModelReply(text, int(usage.input_tokens), int(usage.output_tokens))


class ScriptedModel:
    """The baseline without a model: it answers with the task's reference program, one cell
    per reply, and reacts to events like a careful user: a failed cell is run once more from the
    home pose, a second failure ends the episode. It never reads the images."""

    name = SCRIPTED

    def __init__(self, cells: list[str], retries_per_cell: int = 1) -> None:
        if not cells:
            raise ValueError('the scripted model needs at least one reference cell')
        self.cells = cells
        self.retries_per_cell = retries_per_cell
        self.index = -1
        self.retries = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(self._answer(request.decision), 0, 0)

    def _answer(self, d: Decision) -> str:
        n = len(self.cells)
        if d.reason in ('escalation', 'error'):
            if self.retries < self.retries_per_cell:
                self.retries += 1
                return (
                    f'Step {self.index + 1} of {n} stopped ({d.event or d.cell_status}); '
                    f'going home and trying it once more.\n'
                    f'<python>\nhome()\n{self.cells[self.index]}</python>'
                )
            return (
                f'Step {self.index + 1} of {n} failed twice.\n'
                f'<finish>gave up: step {self.index + 1} of the reference program failed twice '
                f'({d.event or d.cell_status})</finish>'
            )
        self.index += 1
        self.retries = 0
        if self.index >= n:
            return (
                'Every step of the reference program ran.\n<finish>reference program done</finish>'
            )
        cell = self.cells[self.index]
        return f'Step {self.index + 1} of {n} of the reference program.\n<python>\n{cell}</python>'


def make_model(name: str, cells: list[str] | None, timeout: float, retries: int) -> ModelClient:
    """`scripted` (needs the task's reference cells) or a Claude model by name."""
    if name == SCRIPTED:
        if cells is None:
            raise ModelError('the scripted model needs a task with a reference program', setup=True)
        return ScriptedModel(cells)
    return AnthropicModel(name, timeout, retries)
