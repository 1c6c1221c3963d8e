"""Fixtures of the render tests (helpers live in render_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from render_helpers import RenderRunner


@pytest.fixture(scope="module")
def local_runner() -> Iterator[RenderRunner]:
    runner = RenderRunner("local")
    yield runner
    runner.close()
