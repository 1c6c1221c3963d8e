"""Fixtures for the sandbox tests: one real provider per test, on the real engine / bwrap."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
import sandbox_helpers
from verifiers.sandbox import LocalProvider, SandboxSettings

from verifiers.types import Result

T = TypeVar("T")

BACKENDS = [
    pytest.param("docker", marks=pytest.mark.docker, id="docker"),
    pytest.param("local", marks=pytest.mark.bwrap, id="bwrap"),
]


def make_provider(kind: str, **settings: Any) -> Any:
    """A real provider: Docker (built ``python`` image) or local under bubblewrap."""
    config = SandboxSettings(**settings)
    if kind == "docker":
        from verifiers.sandbox._docker import DockerProvider

        return DockerProvider(config)
    config = config.model_copy(update={"local_isolation": "bwrap"})
    return LocalProvider(config)


Run = Callable[[Callable[[Any], Awaitable[T]]], T]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def new_provider(backend: str) -> Callable[..., Any]:
    """``new_provider(**settings)``: a real provider of the test's backend (caller closes)."""
    return lambda **settings: make_provider(backend, **settings)


@pytest.fixture()
def run_with(backend: str) -> Iterator[Callable[..., Any]]:
    """``run_with(async_fn, **settings)``: a fresh provider, ``async_fn(provider)``, close."""

    def runner(body: Callable[[Any], Awaitable[T]], **settings: Any) -> T:
        async def main() -> T:
            provider = make_provider(backend, **settings)
            try:
                return await body(provider)
            finally:
                await provider.close()

        return asyncio.run(main())

    yield runner


@pytest.fixture()
def score_rows(backend: str) -> Callable[..., list[Result]]:
    """``score_rows(rows, pool_size=1, **engine)``: the rows in one run of the real engine on a
    fresh provider of the test's backend (``pool_size`` runners, as many at once; no retries
    unless ``engine`` says so: an abstain shows as ``error``). The run itself is
    :func:`sandbox_helpers.score_rows`, which tests with a provider of their own call directly."""

    def score(rows: list[dict[str, Any]], *, pool_size: int = 1, **engine: Any) -> list[Result]:
        provider = make_provider(backend, pool_size=pool_size)
        return sandbox_helpers.score_rows(provider, rows, **{"concurrency": pool_size, **engine})

    return score
