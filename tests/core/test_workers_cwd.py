"""Worker processes import the caller's ``verifiers``, whatever the working directory holds.

Regression for issue 13 item 6: workers started as ``python -m verifiers._worker`` put the
working directory first on ``sys.path``, so from a source checkout (the repository root) they
imported the source tree's ``verifiers/`` without ``domains`` and every domain verifier errored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from verifiers.workers import WorkerPool


def _call_from(cwd: Path, target: str) -> object:
    async def run() -> object:
        pool = WorkerPool(1)
        try:
            return await pool.call(target, "a/x", timeout=60)
        finally:
            await pool.aclose()

    return asyncio.run(run())


def test_a_shadowing_verifiers_folder_in_cwd_is_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cwd whose verifiers/ is not the library: what the repository root is to a wheel install.
    fake = tmp_path / "verifiers"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the shadowing source tree')\n")
    monkeypatch.chdir(tmp_path)
    assert _call_from(tmp_path, "posixpath:basename") == "x"
