"""Prompt templates, one per file in this package, with ``{{name}}`` placeholders.

A file of the same name (``.txt`` or ``.md``) in a user's ``prompts_dir`` replaces the
packaged one, so prompts can be tuned without touching the code. Rendering is a single
pass: text substituted into a placeholder is never scanned again, so a chunk that happens
to contain ``{{x}}`` is passed through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from ..errors import ConfigError

__all__ = ["bullets", "fill", "load", "names", "placeholders", "render"]

SUFFIXES = (".txt", ".md")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def names() -> list[str]:
    """The packaged prompt names."""
    found = {
        entry.name.rsplit(".", 1)[0]
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(SUFFIXES) and entry.is_file()
    }
    return sorted(found)


def load(name: str, prompts_dir: Path | None = None) -> str:
    """The template text: ``prompts_dir/NAME.txt`` (or ``.md``) if present, else the packaged one."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"invalid prompt name {name!r}")
    if prompts_dir is not None:
        directory = Path(prompts_dir).expanduser()
        if not directory.is_dir():
            raise ConfigError(f"prompts_dir {str(directory)!r} is not a directory")
        for suffix in SUFFIXES:
            override = directory / f"{name}{suffix}"
            if override.is_file():
                return override.read_text(encoding="utf-8").rstrip()
    package = resources.files(__name__)
    for suffix in SUFFIXES:
        packaged = package / f"{name}{suffix}"
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8").rstrip()
    raise ConfigError(f"unknown prompt {name!r}; known prompts: {', '.join(names())}")


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))


def fill(template: str, values: dict[str, object], *, name: str = "<template>") -> str:
    """Substitute every ``{{placeholder}}``; one without a value is a :class:`ConfigError`.

    Values that the template does not use are allowed: an overriding template may leave
    some context out on purpose.
    """
    missing = sorted(placeholders(template) - values.keys())
    if missing:
        raise ConfigError(
            f"prompt {name!r} has placeholders with no value: {', '.join('{{' + m + '}}' for m in missing)}"
        )
    return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def render(name: str, /, *, prompts_dir: Path | None = None, **values: object) -> str:
    """Load the prompt ``name`` (see :func:`load`) and fill its placeholders with ``values``."""
    return fill(load(name, prompts_dir), values, name=name)


def bullets(items: Iterable[str], *, empty: str = "(none)") -> str:
    """Items as a ``- item`` list, one per line, or ``empty`` when there are none."""
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) if lines else empty
