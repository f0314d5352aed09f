"""System prompts assembled per episode from the files in prompts/<bench>/."""

from __future__ import annotations

from pathlib import Path

from harness_kernel.program_api import api_reference

PARTS = ('role.md', 'method.md', 'api.md', 'format.md')
VERIFIER = 'verifier.md'


class PromptError(ValueError):
    """A prompt file is missing; the message names it."""


def _read(folder: Path, name: str) -> str:
    path = folder / name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise PromptError(f'prompt file {path} does not exist') from None


def system_prompt(
    folder: str | Path, api_names: list[str] | None = None, doc_values: dict | None = None
) -> str:
    """The main model's system prompt: role, method, the API reference of the enabled API
    names (their docstrings, configured values rendered from `doc_values`), the reply
    format."""
    folder = Path(folder)
    parts = [_read(folder, name) for name in PARTS]
    reference = api_reference(api_names, doc_values)
    return '\n\n'.join(p.replace('{api_reference}', reference) for p in parts)


def verifier_prompt(folder: str | Path) -> str:
    return _read(Path(folder), VERIFIER)
