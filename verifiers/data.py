"""Files shipped in ``datasets/``: examples, task suites, regression corpora.

Installed as ``verifiers._data``.

``datasets/`` is data only and never an importable top-level package: a ``datasets``
package would shadow Hugging Face ``datasets``, which TRL imports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

__all__ = ["data_path", "data_root", "iter_jsonl"]


def data_path(*parts: str) -> Path:
    """Path of a shipped data file, e.g. ``data_path("examples", "quickstart.jsonl")``.

    Raises:
        FileNotFoundError: no such file in the installed data.
    """
    path = data_root().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"no shipped data file {'/'.join(parts)!r} under {data_root()}")
    return path


def data_root() -> Path:
    """The shipped data directory.

    Installed from a wheel it is ``verifiers/_data``. In an editable install setuptools cannot
    map a data-only namespace package (``datasets/`` has no ``__init__.py`` by design), so
    there it is the checkout's ``datasets/`` folder.
    """
    installed = Path(__file__).resolve().parent / "_data"
    if installed.is_dir():
        return installed
    try:
        with as_file(files("verifiers._data")) as path:
            return Path(path)
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "datasets"


def iter_jsonl(*parts: str) -> Iterator[dict[str, Any]]:
    """Parsed lines of a shipped JSONL file (trusted data; blank lines skipped)."""
    with data_path(*parts).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
