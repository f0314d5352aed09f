"""System prompts assembled per episode from the files in prompts/<bench>/."""

from __future__ import annotations

from pathlib import Path

from harness_kernel.program_api import api_reference
from harness_types.docs import render_doc
from harness_types.whole_file import read_text

PARTS = ('role.md', 'method.md', 'api.md', 'format.md')
LEARNED = 'learned.md'  # with policies enabled: the learned API and the division of labour
VERIFIER = 'verifier.md'


class PromptError(ValueError):
    """A prompt file is missing; the message names it."""


def _read(folder: Path, name: str) -> str:
    path = folder / name
    if not folder.is_dir():
        raise PromptError(f'the prompt folder {folder} is not a folder')
    try:
        return read_text(path).strip()
    except FileNotFoundError:
        raise PromptError(f'prompt file {path} does not exist') from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f'prompt file {path} cannot be read: {exc}') from None


def system_prompt(
    folder: str | Path,
    api_names: list[str] | None = None,
    doc_values: dict | None = None,
    policies: bool = False,
    interface: str = 'programs',
) -> str:
    """The main model's system prompt: role, method, (with policies) the learned half and the
    division of labour, the API reference of the enabled API names (their docstrings,
    configured values rendered from `doc_values`), the reply format of the interface's rung
    (format_<interface>.md below the programs rung)."""
    folder = Path(folder)
    names = [*PARTS[:2], LEARNED, *PARTS[2:]] if policies else list(PARTS)
    if interface != 'programs':
        names[-1] = f'format_{interface}.md'
    parts = [_read(folder, name) for name in names]
    reference = api_reference(api_names, doc_values)
    # The parts name configured values as the docstrings do ({control_hz:g}, ...).
    text = render_doc('\n\n'.join(parts), doc_values or {})
    return text.replace('{api_reference}', reference)


def verifier_prompt(folder: str | Path) -> str:
    return _read(Path(folder), VERIFIER)
