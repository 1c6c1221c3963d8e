"""The scoring engine: async core, thin sync facade.

One place turns exceptions into ``status="error"`` results (:meth:`Engine._boundary`).
Everything else in the library raises; nothing else catches broadly.

Flow per item: resolve the verifier (registry) -> validate ``task.spec`` with its ``Spec``
(memoised) -> cache lookup -> ``verify`` under the item deadline, with retries for
``InfraError`` only -> cache store -> stamp ``id``, ``verifier``, ``duration_s``.

Throughput notes: verifiers that subclass :class:`InlineVerifier` are cheap and pure; the
engine calls them directly in the streaming loop (no task per item, no cache lookup, no
deadline: they are bounded by construction). Everything else runs as a task under a
semaphore of ``concurrency``; results stream out in input order through a bounded window, so
memory stays flat on files of any length.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._validation import settings_problems
from .compose import combine
from .context import SandboxProvider, VerifierContext
from .errors import (
    BadInput,
    InfraError,
    InvalidOutput,
    InvalidSettings,
    RunAborted,
    SandboxUnavailable,
    VerifierError,
)
from .protocol import InlineVerifier, Spec, Verifier, parse_spec
from .registry import get_verifier
from .types import Result, Task, Trajectory

if TYPE_CHECKING:
    from .cache import ResultCache
    from .episode import Episode
    from .workers import WorkerPool

__all__ = ["Engine", "EngineSettings", "score", "score_async"]

log = logging.getLogger("verifiers.engine")

Item = Trajectory | Result | Mapping[str, Any]

EPISODE_POOL_SIZE = 64
"""Most episode sandboxes of one runtime open at once per engine (each holds a warm worker for
its whole rollout; a trainer's batch of episodes must fit)."""

_BUDGET_MARGIN_S = 10.0
"""Seconds past a verifier's declared budget for what is not the model's time: the sandbox's
own host-side grace, start-up of its worker, parsing the verdict."""


class EngineSettings(BaseModel):
    """Engine knobs. Every field has an environment override ``VERIFIERS_<FIELD>``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(default=8, ge=1)
    """Items verified at once (non-inline verifiers)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Per-item deadline; the item gets ``status=error`` kind ``timeout`` past it."""
    retries: int = Field(default=2, ge=0)
    """Extra attempts for ``infra`` errors (only those)."""
    retry_backoff_s: float = Field(default=0.5, ge=0)
    """First backoff; doubles each retry."""
    fail_fast_after: int = Field(default=0, ge=0)
    """Stop :meth:`Engine.stream` with :class:`~verifiers.errors.RunAborted` after this many
    identical non-retryable infra errors in a row (no Docker engine, a runtime not built, a
    missing extra): a run that cannot judge anything should say so once, not write 20k
    errors. ``0`` (the library default) never stops: a trainer's adapter keeps abstaining.
    ``verifiers score`` uses 10 (``--fail-fast-after``)."""
    cache: bool | Path = False
    """``True`` for the default cache file, a path for a specific one, ``False`` for none."""
    sandbox: str = "auto"
    """Sandbox backend for verifiers that run code, opened on first use: ``auto``, ``none``,
    or a registered backend (``docker``, ``local``, ``fake``, or a plugin's, see
    ``verifiers.sandbox.backend_names()``)."""

    @field_validator("sandbox")
    @classmethod
    def _known_sandbox(cls, value: str) -> str:
        try:
            from verifiers.sandbox._registry import backend_names
        except ImportError:  # no sandbox package: only `none` can work, others fail on use
            return value
        known = ["auto", "none", *backend_names()]
        if value not in known:
            raise ValueError(f"unknown sandbox {value!r}; use one of: {', '.join(known)}")
        return value

    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    """Worker processes for CPU-heavy verification."""
    worker_memory_mb: int = Field(default=4096, gt=0)
    """Default memory limit of a worker job, MiB."""
    window: int | None = None
    """Items in flight before results are emitted (default ``4 * concurrency``)."""

    @classmethod
    def from_env(
        cls, *, labels: Mapping[str, str] | None = None, **overrides: Any
    ) -> EngineSettings:
        """Settings from ``VERIFIERS_*`` environment variables, then ``overrides``.

        Args:
            labels: How to name an override in errors (``{"timeout_s": "--timeout"}``).

        Raises:
            InvalidSettings: one line per invalid setting, naming its source (flag or
                variable), its value and the valid range.
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in cls.model_fields:
            raw = os.environ.get(f"VERIFIERS_{name.upper()}")
            if raw is not None:
                values[name] = raw
                sources[name] = f"VERIFIERS_{name.upper()}"
        for key, value in overrides.items():
            if value is not None:
                values[key] = value
                sources[key] = (labels or {}).get(key, key)
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise InvalidSettings(settings_problems(exc, cls, values, sources)) from None


class _LazySandboxes:
    """Opens the configured sandbox provider the first time a verifier asks for one."""

    def __init__(self, kind: str, pool_size: int | None = None) -> None:
        self.kind = kind
        self.pool_size = pool_size
        self._provider: SandboxProvider | None = None

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Any]:
        if self._provider is None:
            if self.kind == "none":
                raise SandboxUnavailable(
                    "sandboxes are disabled (--sandbox none)",
                    hint="use --sandbox auto, docker or local",
                    retryable=False,
                )
            try:
                from verifiers.sandbox import open_provider
            except ImportError as exc:
                raise SandboxUnavailable(
                    f"sandbox package unavailable: {exc}",
                    hint="pip install 'verifiers[sandbox]'",
                    retryable=False,
                ) from None
            settings = None
            if self.pool_size is not None:
                from verifiers.sandbox import SandboxSettings

                settings = SandboxSettings(pool_size=self.pool_size)
            self._provider = open_provider(self.kind, settings)
        return self._provider.session(image, **limits)

    async def close(self) -> None:
        if self._provider is not None:
            await self._provider.close()
            self._provider = None


class Engine:
    """Scores trajectories. Use ``async with Engine(...) as engine``.

    Args:
        settings: Engine settings (default: from the environment).
        base_dir: Directory relative artifact/document paths resolve against.
        sandboxes: A sandbox provider to use instead of opening ``settings.sandbox``.
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        base_dir: Path | str | None = None,
        sandboxes: SandboxProvider | None = None,
    ) -> None:
        self.settings = settings or EngineSettings.from_env()
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self._sandboxes: SandboxProvider = sandboxes or _LazySandboxes(self.settings.sandbox)
        # Episodes hold their sandbox for a whole rollout: a pool of their own, so held episode
        # sessions never starve the verification sandboxes their submits need (a deadlock).
        self._episode_sandboxes: SandboxProvider = sandboxes or _LazySandboxes(
            self.settings.sandbox, pool_size=EPISODE_POOL_SIZE
        )
        self._instances: dict[str, Verifier[Any]] = {}
        self._specs: dict[tuple[str, str], Spec] = {}
        self._inline: dict[str, bool] = {}
        self._budget_warned: set[str] = set()
        self._semaphore: asyncio.Semaphore | None = None
        self._workers: WorkerPool | None = None
        self._cache: ResultCache | None = None
        self._cache_opened = False

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close verifiers, worker processes, sandboxes and the cache."""
        for verifier in self._instances.values():
            try:
                await verifier.close()
            except Exception:
                log.exception("closing verifier %s failed", verifier.name)
        self._instances.clear()
        if self._workers is not None:
            await self._workers.aclose()
            self._workers = None
        await self._sandboxes.close()
        if self._episode_sandboxes is not self._sandboxes:
            await self._episode_sandboxes.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # -- public API --------------------------------------------------------------------

    async def score(self, items: Iterable[Item] | AsyncIterable[Item]) -> list[Result]:
        """Score every item; results in input order."""
        return [result async for result in self.stream(items)]

    async def score_one(self, item: Item) -> Result:
        """Score a single item."""
        results = await self.score([item])
        return results[0]

    async def stream(self, items: Iterable[Item] | AsyncIterable[Item]) -> AsyncIterator[Result]:
        """Yield one result per item, in input order, while later items are in flight.

        ``items`` may hold ready-made ``Result`` objects (e.g. ``bad_input`` results a reader
        made for unparsable lines); they pass through in place.

        Raises:
            RunAborted: ``settings.fail_fast_after`` identical non-retryable infra errors came
                in a row; the results of that streak are not yielded (they were not judged).
        """
        limit = self.settings.fail_fast_after
        if not limit:
            async for result in self._ordered(items):
                yield result
            return
        # Fail fast: results of a streak of identical non-retryable infra errors are held back
        # (at most ``limit``); a different result releases them, the limit-th aborts the run.
        # What was yielded is then all judged, so ``--resume`` re-scores the streak's items.
        held: list[Result] = []
        async for result in self._ordered(items):
            streak = _unretryable(result)
            if held and (streak is None or streak != _unretryable(held[0])):
                for earlier in held:
                    yield earlier
                held.clear()
            if streak is None:
                yield result
                continue
            held.append(result)
            if len(held) >= limit:
                message, hint = streak
                raise RunAborted(message, hint=hint, count=len(held))
        for earlier in held:
            yield earlier

    async def _ordered(self, items: Iterable[Item] | AsyncIterable[Item]) -> AsyncIterator[Result]:
        window = self.settings.window or 4 * self.settings.concurrency
        pending: deque[asyncio.Task[Result] | Result] = deque()

        async def drain_head() -> AsyncIterator[Result]:
            while pending:
                head = pending[0]
                if isinstance(head, Result):
                    pending.popleft()
                    yield head
                    continue
                if len(pending) < window and not head.done():
                    return
                pending.popleft()
                yield await head

        try:
            async for item in _aiter(items):
                pending.append(self._start(item))
                async for result in drain_head():
                    yield result
            while pending:
                head = pending.popleft()
                yield head if isinstance(head, Result) else await head
        finally:
            for task in pending:
                if isinstance(task, asyncio.Task):
                    task.cancel()

    def episode(self, item: Trajectory | Mapping[str, Any], **settings: Any) -> Episode:
        """One live sandbox session for one rollout of ``item``'s task (``async with``).

        ``settings`` are :class:`verifiers.EpisodeSettings` fields, over the item's own
        ``"episode"`` object. See :mod:`verifiers.episode` and docs/episodes.md.

        Raises:
            BadInput: the item or the settings are invalid (the message names the field).
        """
        from .episode import Episode, settings_for

        return Episode(self, item, settings_for(item, settings))

    # -- internals ---------------------------------------------------------------------

    def _start(self, item: Item) -> asyncio.Task[Result] | Result:
        if isinstance(item, Result):
            return item
        started = time.perf_counter()
        try:
            trajectory = item if isinstance(item, Trajectory) else Trajectory.model_validate(item)
        except ValidationError as exc:
            raw_id = item.get("id") if isinstance(item, Mapping) else None
            result = Result.errored("bad_input", validation_message(exc))
            return result.model_copy(update={"id": None if raw_id is None else str(raw_id)})
        task = trajectory.task
        if task.verifier is not None:
            # Fast path: cheap synchronous verdicts are made right here (see verify_inline).
            verifier: Verifier[Any] | None = None
            try:
                verifier = self._verifier(task.verifier)
                if self._has_inline(verifier):
                    spec = self._spec(verifier, task.spec)
                    if verifier.reference_required and task.reference is None:
                        raise BadInput(f"verifier {verifier.name!r} needs task.reference")
                    inline = verifier.verify_inline(trajectory, spec)
                    if inline is not None:
                        return self._stamp(inline, trajectory, verifier, started)
            except Exception as exc:
                return self._stamp(
                    _error_result(exc, self.settings.timeout_s), trajectory, verifier, started
                )
        return asyncio.ensure_future(self._judge(trajectory))

    async def _judge(self, trajectory: Trajectory) -> Result:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.settings.concurrency)
        async with self._semaphore:
            started = time.perf_counter()
            deadline = time.monotonic() + self._item_timeout(trajectory.task)
            task = trajectory.task
            if task.checks:
                subs = [
                    trajectory.model_copy(
                        update={
                            "task": Task(
                                verifier=check.verifier,
                                spec=check.spec,
                                reference=(
                                    check.reference
                                    if check.reference is not None
                                    else task.reference
                                ),
                            )
                        }
                    )
                    for check in task.checks
                ]
                parts = await asyncio.gather(*(self._boundary(s, deadline) for s in subs))
                result = combine(task, parts)
                return self._stamp(result, trajectory, None, started, name="compose")
            return await self._boundary(trajectory, deadline)

    def _item_timeout(self, task: Task) -> float:
        """Seconds an item may take: the engine's ``timeout_s``, or more where a verifier of
        the item declares a larger budget (``Verifier.budget_s``) plus ``_BUDGET_MARGIN_S``.

        An engine timeout must only ever mean that the verifier or the machine failed: if the
        engine cut an item off before its verifier's own limits (a code test's ``timeout_s``)
        ran out, a model could turn its certain 0 into an ``error`` (an abstain) by sleeping
        just under them. Checks run concurrently, so the largest budget counts. Warns once
        per verifier whose budget exceeds ``timeout_s`` (the CLI's ``--timeout``).
        """
        needed = self.settings.timeout_s
        parts = task.checks if task.checks else [task]
        for part in parts:
            try:
                assert part.verifier is not None
                verifier = self._verifier(part.verifier)
                budget = verifier.budget_s(self._spec(verifier, part.spec))
            except Exception:  # an unknown verifier or bad spec errors later, at the boundary
                continue
            if budget is None or budget + _BUDGET_MARGIN_S <= self.settings.timeout_s:
                continue
            needed = max(needed, budget + _BUDGET_MARGIN_S)
            if verifier.name not in self._budget_warned:
                self._budget_warned.add(verifier.name)
                log.warning(
                    "verifier %s allows up to %.0fs per item, above the per-item timeout of "
                    "%.0fs (--timeout / VERIFIERS_TIMEOUT_S): such items get %.0fs so a slow "
                    "model is judged (fail) rather than cut off (error)",
                    verifier.name,
                    budget,
                    self.settings.timeout_s,
                    budget + _BUDGET_MARGIN_S,
                )
        return needed

    async def _boundary(self, trajectory: Trajectory, deadline: float) -> Result:
        """The one error boundary: any exception becomes an ``error`` result."""
        started = time.perf_counter()
        verifier: Verifier[Any] | None = None
        try:
            assert trajectory.task.verifier is not None
            verifier = self._verifier(trajectory.task.verifier)
            spec = self._spec(verifier, trajectory.task.spec)
            if verifier.reference_required and trajectory.task.reference is None:
                raise BadInput(f"verifier {verifier.name!r} needs task.reference")
            result = await self._cached_verify(verifier, trajectory, spec, deadline)
        except Exception as exc:
            result = _error_result(exc, self.settings.timeout_s)
        return self._stamp(result, trajectory, verifier, started)

    async def _cached_verify(
        self, verifier: Verifier[Any], trajectory: Trajectory, spec: Spec, deadline: float
    ) -> Result:
        cache = self._open_cache() if verifier.cacheable else None
        key = None
        if cache is not None:
            key = cache.key_for(type(verifier), spec, trajectory, self.base_dir)
            hit = cache.get(key)
            if hit is not None:
                return hit
        result = await self._verify_with_retries(verifier, trajectory, spec, deadline)
        if cache is not None and key is not None and result.status != "error":
            cache.put(key, result)
        return result

    async def _verify_with_retries(
        self, verifier: Verifier[Any], trajectory: Trajectory, spec: Spec, deadline: float
    ) -> Result:
        attempt = 0
        backoff = self.settings.retry_backoff_s
        while True:
            attempt += 1
            ctx = VerifierContext(
                deadline=deadline,
                base_dir=self.base_dir,
                workers=self._worker_pool(),
                sandboxes=self._sandboxes,
                logger=log,
            )
            try:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                # asyncio.timeout, not wait_for: no extra task per item on the hot path.
                async with asyncio.timeout(remaining):
                    result = await verifier.verify(trajectory, spec, ctx)
                if not isinstance(result, Result):
                    raise VerifierError(
                        f"verifier {verifier.name!r} returned {type(result).__name__}, not Result"
                    )
                return ctx.account(result)  # details["resources"] of its sandbox jobs
            except InfraError as exc:
                if (
                    not exc.retryable
                    or attempt > self.settings.retries
                    or time.monotonic() + backoff >= deadline
                ):
                    result = _error_result(exc, self.settings.timeout_s)
                    assert result.error is not None
                    return result.model_copy(
                        update={"error": result.error.model_copy(update={"attempts": attempt})}
                    )
                log.warning("infra error in %s (attempt %d): %s", verifier.name, attempt, exc)
                await asyncio.sleep(backoff)
                backoff *= 2
            finally:
                ctx.cleanup()

    def _has_inline(self, verifier: Verifier[Any]) -> bool:
        overridden = self._inline.get(verifier.name)
        if overridden is None:
            overridden = isinstance(verifier, InlineVerifier) or (
                type(verifier).verify_inline is not Verifier.verify_inline
            )
            self._inline[verifier.name] = overridden
        return overridden

    def _verifier(self, name: str) -> Verifier[Any]:
        verifier = self._instances.get(name)
        if verifier is None:
            verifier = get_verifier(name)()
            self._instances[name] = verifier
        return verifier

    def _spec(self, verifier: Verifier[Any], raw: dict[str, Any] | None) -> Spec:
        # Not sort_keys: specs from one source keep their key order, and a different order
        # only costs a memo miss. Sorting a spec that carries a whole table costs ~20 µs/item.
        key_text = "" if not raw else json.dumps(raw, default=str)
        key = (verifier.name, key_text)
        spec = self._specs.get(key)
        if spec is None:
            spec = parse_spec(type(verifier), raw)
            if len(self._specs) > 4096:
                self._specs.clear()
            self._specs[key] = spec
        return spec

    def _worker_pool(self) -> WorkerPool:
        if self._workers is None:
            from .workers import WorkerPool

            self._workers = WorkerPool(
                self.settings.workers, memory_mb=self.settings.worker_memory_mb
            )
        return self._workers

    def _open_cache(self) -> ResultCache | None:
        if not self._cache_opened:
            self._cache_opened = True
            setting = self.settings.cache
            if setting is not False:
                from .cache import ResultCache, default_cache_path

                path = default_cache_path() if setting is True else Path(setting)
                try:
                    self._cache = ResultCache(path)
                except VerifierError as exc:
                    # A broken cache must not turn items into errors: score without it.
                    log.warning("result cache disabled: %s", exc)
        return self._cache

    @staticmethod
    def _stamp(
        result: Result,
        trajectory: Trajectory,
        verifier: Verifier[Any] | None,
        started: float,
        *,
        name: str | None = None,
    ) -> Result:
        label = name or (f"{verifier.name}@{verifier.version}" if verifier is not None else "")
        return result.model_copy(
            update={
                "id": trajectory.id,
                "verifier": label or trajectory.task.verifier or "",
                "duration_s": time.perf_counter() - started
                if not result.cached
                else result.duration_s,
            }
        )


def validation_message(exc: ValidationError, limit: int = 3) -> str:
    """A short, readable account of a pydantic error: ``task.verifier: field required``."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def _error_result(exc: Exception, timeout_s: float) -> Result:
    if isinstance(exc, InvalidOutput):
        # The model's output broke the check: its fail, never an abstain (errors.py).
        return Result.failed(str(exc), details={"invalid_output": True})
    if isinstance(exc, TimeoutError):
        return Result.errored("timeout", f"verifier did not finish within {timeout_s:g}s")
    if isinstance(exc, VerifierError):
        details: dict[str, Any] | None = None
        if exc.kind == "infra" and not exc.retryable:
            # Marks a cause a retry cannot fix, for fail-fast (Engine.stream) and for readers.
            details = {"infra": {"retryable": False, "message": exc.message, "hint": exc.hint}}
        return Result.errored(exc.kind, str(exc), details=details)  # type: ignore[arg-type]
    if isinstance(exc, ValidationError):
        return Result.errored("verifier", f"invalid result: {validation_message(exc)}")
    log.debug("verifier raised", exc_info=exc)
    return Result.errored("verifier", f"{type(exc).__name__}: {exc}")


def _unretryable(result: Result) -> tuple[str, str | None] | None:
    """``(message, hint)`` of a non-retryable infra error result, else ``None``."""
    if result.error is None or result.error.kind != "infra":
        return None
    infra = result.details.get("infra")
    if not isinstance(infra, dict) or infra.get("retryable") is not False:
        return None
    hint = infra.get("hint")
    return str(infra.get("message") or result.error.message), None if hint is None else str(hint)


async def _aiter(items: Iterable[Item] | AsyncIterable[Item]) -> AsyncIterator[Item]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


# -- facades -------------------------------------------------------------------------------


async def score_async(
    items: Iterable[Item] | AsyncIterable[Item],
    *,
    base_dir: Path | str | None = None,
    **settings: Any,
) -> list[Result]:
    """Score ``items`` with a fresh engine; ``settings`` are :class:`EngineSettings` fields."""
    async with Engine(EngineSettings.from_env(**settings), base_dir=base_dir) as engine:
        return await engine.score(items)


def score(
    items: Iterable[Item],
    *,
    base_dir: Path | str | None = None,
    **settings: Any,
) -> list[Result]:
    """Synchronous :func:`score_async`.

    Raises:
        RuntimeError: called from inside a running event loop (use ``await score_async``).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(score_async(items, base_dir=base_dir, **settings))
    raise RuntimeError(
        "verifiers.score() cannot run inside a running event loop; use 'await verifiers.score_async(...)'"
    )
