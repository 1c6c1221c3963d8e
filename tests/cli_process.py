"""Run the ``verifiers`` console script as a user would (imported as ``cli_process``)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "verifiers"
"""The console script of the venv running the tests."""


def run_cli(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``verifiers *args`` with the result cache in ``cwd`` (unless ``env`` sets it)."""
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("VERIFIERS_CACHE_DIR", str(cwd or Path.cwd()))
    run = functools.partial(subprocess.run, capture_output=True, text=True, timeout=timeout)
    done: subprocess.CompletedProcess[str] = run(
        [str(SCRIPT), *map(str, args)], cwd=cwd, env=full_env, input=stdin
    )
    return done
