"""``async with`` for the library's resources, written once.

An engine, a sandbox and an episode are each opened by ``async with`` and closed when the
block ends, also when it raised. :class:`AsyncContext` is that protocol; a class names what
entering does (``_enter``: nothing by default; an episode opens its sandbox) and what leaving
does (``_exit``: close). Exceptions from the block always propagate: leaving never swallows.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncContext"]


class AsyncContext:
    """Mixin: ``async with x`` runs ``x._enter()``, the block, then ``x._exit()``."""

    __slots__ = ()

    async def __aenter__(self) -> Self:
        await self._enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._exit()

    async def _enter(self) -> None:
        """What entering does before the block; nothing unless a class says."""

    async def _exit(self) -> None:
        """What leaving does (close), whether the block returned or raised."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it closes")
