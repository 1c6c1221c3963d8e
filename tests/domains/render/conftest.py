"""Fixtures of the render tests (helpers live in render_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from render_helpers import RenderRunner
from verifiers.domains.render import PoolSettings


@pytest.fixture(scope="module")
def local_runner() -> Iterator[RenderRunner]:
    runner = RenderRunner(PoolSettings(backend="local", workers=1))
    yield runner
    runner.close()
