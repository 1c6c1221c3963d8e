"""Fixtures of the finance verifier tests: synthetic reports generated per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from verifiers.domains.finance import pdf_cache, synth


@pytest.fixture(scope="session")
def reports_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 3-page synthetic reports, ruled and unruled, written at test time."""
    out = tmp_path_factory.mktemp("finance-reports")
    for seed in (11, 12):
        report = synth.make_report(seed, pages=3)
        synth.write_pdf(report, out / f"ruled-{seed}.pdf", ruled=True)
        synth.write_pdf(report, out / f"unruled-{seed}.pdf", ruled=False)
    return out


@pytest.fixture()
def fresh_pdf_cache(tmp_path: Path) -> Any:
    """Point the process-wide PDF cache at an empty directory for one test."""
    saved = pdf_cache.directory
    pdf_cache.directory = tmp_path / "pdf-cache"
    pdf_cache.clear_memory()
    yield pdf_cache
    pdf_cache.directory = saved
    pdf_cache.clear_memory()
