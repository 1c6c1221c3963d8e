"""Fixtures for the code.tests tests (helpers live in ``code_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from code_helpers import Backend, SubprocessProvider


@pytest.fixture
def subprocess_provider() -> SubprocessProvider:
    return SubprocessProvider()


@pytest.fixture(scope="module")
def local_backend() -> Iterator[Backend]:
    """The real local backend (bubblewrap), shared by a module's tests."""
    backend = Backend("local")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def docker_backend() -> Iterator[Backend]:
    """The real Docker warm pool (needs the engine and the built ``python`` image)."""
    backend = Backend("docker")
    yield backend
    backend.close()


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("subprocess"),
        pytest.param("local", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """Each backend in turn: bare subprocesses (logic), the local bwrap backend, Docker."""
    b = Backend(str(request.param))
    yield b
    b.close()
