"""The scoring engine: async core, thin sync facade.

One place turns exceptions into ``status="error"`` results (:meth:`Engine._boundary`).
Everything else in the library raises; nothing else catches broadly.

Flow per item: validate the trajectory (``io.trajectory_from``, as the file reader does) ->
resolve the verifier and validate ``task.spec`` (``Engine._resolve``, memoised) -> cache
lookup -> ``verify`` under the item deadline, with retries for ``InfraError`` only -> cache
store -> ``Engine._stamp``, the one place ``id``, ``verifier``, ``duration_s``, ``error.line``
and ``error.attempts`` are set. docs/design/engine.md draws the whole path.

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
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._lifecycle import AsyncContext
from ._validation import settings_problems
from .compose import fold_checks
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
from .io import InputRecord, text_id, trajectory_from
from .protocol import InlineVerifier, Spec, Verifier, parse_spec
from .registry import get_verifier
from .settings import env
from .types import Result, Task, Trajectory

if TYPE_CHECKING:
    import argparse

    from ._machine import MachineSlots
    from .cache import ResultCache
    from .episode import Episode
    from .workers import WorkerPool

__all__ = ["Engine", "EngineSettings", "score", "score_async"]

log = logging.getLogger("verifiers.engine")

_T = TypeVar("_T")

Item = Trajectory | Result | Mapping[str, Any] | InputRecord
"""What the engine scores: a trajectory (or its mapping), a reader's ready-made result, or
an :class:`~verifiers.io.InputRecord` (its line number then reaches ``ctx.line`` and the
result's ``error.line``)."""

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
            **overrides: Field values that win over the environment (``None`` is "not given").

        Raises:
            InvalidSettings: one line per invalid setting, naming its source (flag or
                variable), its value and the valid range.
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in cls.model_fields:
            raw = env(f"VERIFIERS_{name.upper()}")
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

    @classmethod
    def from_flags(cls, args: argparse.Namespace, **overrides: Any) -> EngineSettings:
        """:meth:`from_env` with the command-line flags of :data:`FLAGS` found on ``args``.

        ``verifiers score`` and ``verifiers serve`` share the flags and their meaning; errors
        name the flag (``--timeout``), not the field. ``overrides`` win over ``args`` (a value
        a command worked out itself, such as its cache default).

        Raises:
            InvalidSettings: as :meth:`from_env`.
        """
        values = {name: getattr(args, name, None) for name in FLAGS}
        return cls.from_env(labels=FLAGS, **{**values, **overrides})


FLAGS: dict[str, str] = {
    "concurrency": "--concurrency",
    "timeout_s": "--timeout",
    "retries": "--retries",
    "workers": "--workers",
    "sandbox": "--sandbox",
    "cache": "--cache-path",
    "fail_fast_after": "--fail-fast-after",
}
"""The engine settings the CLI commands take as flags (``args`` attribute: flag)."""


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


class Engine(AsyncContext):
    """Scores trajectories. Use ``async with Engine(...) as engine``.

    Args:
        settings: Engine settings (default: from the environment).
        base_dir: Directory relative artifact/document paths resolve against.
        sandboxes: A sandbox provider to use instead of opening ``settings.sandbox``.
        machine_slots: A machine-wide limit on items being judged, shared by every process
            of this host that uses the same one (ranks of a trainer: see
            :class:`~verifiers.MachineSlots`). Each judged item holds one slot while it is
            verified, on top of this engine's own ``concurrency``; inline verdicts hold none.
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        base_dir: Path | str | None = None,
        sandboxes: SandboxProvider | None = None,
        machine_slots: MachineSlots | None = None,
    ) -> None:
        self.settings = settings or EngineSettings.from_env()
        self._machine_slots = machine_slots
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self._sandboxes: SandboxProvider = sandboxes or _LazySandboxes(self.settings.sandbox)
        # Episodes hold their sandbox for a whole rollout: a pool of their own, so held episode
        # sessions never starve the verification sandboxes their submits need (a deadlock).
        self._episode_sandboxes: SandboxProvider = sandboxes or _LazySandboxes(
            self.settings.sandbox, pool_size=EPISODE_POOL_SIZE
        )
        self._instances: dict[str, Verifier[Any]] = {}
        self._specs: dict[tuple[str, str], Spec] = {}
        self._resolved: dict[tuple[str, str], tuple[Verifier[Any], Spec, str, bool]] = {}
        self._inline: dict[str, bool] = {}
        self._budget_warned: set[str] = set()
        self._semaphore: asyncio.Semaphore | None = None
        self._workers: WorkerPool | None = None
        self._cache: ResultCache | None = None
        self._cache_opened = False

    # -- lifecycle ---------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close verifiers, worker processes, sandboxes and the cache."""
        for verifier in self._instances.values():
            try:
                await verifier.close()
            except Exception:
                log.exception("closing verifier %s failed", verifier.name)
        self._instances.clear()
        self._resolved.clear()
        if self._workers is not None:
            await self._workers.aclose()
            self._workers = None
        await self._sandboxes.close()
        if self._episode_sandboxes is not self._sandboxes:
            await self._episode_sandboxes.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    async def _exit(self) -> None:
        await self.aclose()

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
        async for result in in_input_order(items, self._start, window):
            yield result

    def episode(self, item: Trajectory | Mapping[str, Any], **settings: Any) -> Episode:
        """One live sandbox session for one rollout of ``item``'s task (``async with``).

        ``settings`` are :class:`verifiers.EpisodeSettings` fields, over the item's own
        ``"episode"`` object. See :mod:`verifiers.episode` and docs/episodes.md.

        Raises:
            BadInput: the item or the settings are invalid (the message names the field).
        """
        from .episode import Episode, settings_for

        return Episode(self, item, settings_for(item, settings))

    def resolve(self, task: Task) -> tuple[Verifier[Any], Spec]:
        """The verifier and validated spec of a single-verifier ``task``.

        Resolved as scoring resolves them (:meth:`_resolve`, the same reference rule), so a
        bad task gets the same words from an episode as from a file line or a Python item.

        Raises:
            UnknownVerifier: no installed verifier has that name.
            BadInput: the task has ``checks`` instead, its spec does not validate, or it lacks
                a reference its verifier needs.
        """
        if task.verifier is None:
            raise BadInput("an episode needs a task with one 'verifier' (not 'checks')")
        verifier, spec, _, _ = self._resolve(task.verifier, task.spec)
        if task.reference is None and verifier.reference_required:
            raise BadInput(f"verifier {verifier.name!r} needs task.reference")
        return verifier, spec

    @property
    def episode_sandboxes(self) -> SandboxProvider:
        """The provider of episodes' live sandboxes (its own warm pool beside scoring's)."""
        return self._episode_sandboxes

    # -- internals ---------------------------------------------------------------------
    #
    # An item's way through the engine: ``_start`` unwraps it (an ``InputRecord`` gives its
    # line); ``trajectory_from`` validates the trajectory and ``_resolve`` each check's
    # verifier and spec (written once: the inline path, the time budget and the judged path
    # all use its answer); the inline fast path answers in the streaming loop, or ``_judge``
    # runs the item as a task. Every stage runs inside ``_boundary``, the one place an exception
    # becomes an ``error`` result, and every result leaves through ``_stamp``, the one place
    # ``id``, ``verifier``, ``duration_s``, ``error.line`` and ``error.attempts`` are set.

    def _start(self, item: Item) -> asyncio.Task[Result] | Result:
        ready = self._prepare(item)
        if isinstance(ready, Result):
            return ready
        return asyncio.ensure_future(self._judge(*ready))

    def _prepare(self, item: Item) -> Result | tuple[Trajectory, list[_Prepared], _Job]:
        """``item``'s verdict when it needs no waiting (inline, bad input), else what to judge.

        Synchronous and free of the event loop: :class:`~verifiers.SyncEngine` calls it on
        its caller's thread so cheap verdicts skip the hop to the engine's loop thread.
        """
        line: int | None = None
        if isinstance(item, InputRecord):
            line, item = item.line, item.item
        if isinstance(item, Result):  # a reader's bad_input line: passes through in place
            return self._stamp(item, _Job(line=line), passthrough=True)
        job = _Job(line=line, started=time.perf_counter())
        prepared: list[_Prepared] | None = None
        trajectory: Trajectory | None = None
        with self._boundary(job):
            if not isinstance(item, Trajectory):
                if isinstance(item, Mapping):  # its id, should it not validate
                    job.ident = text_id(item.get("id"))
                item = trajectory_from(item)
            trajectory = item
            job.ident = cast("str | None", trajectory.id)  # Trajectory makes it text
            task = trajectory.task
            if task.checks:
                prepared = self._prepare_checks(task, job)
            else:
                assert task.verifier is not None  # Task's own validator: one of the two
                job.label = task.verifier
                verifier, spec, job.label, inline = self._resolve(task.verifier, task.spec)
                if task.reference is None and verifier.reference_required:
                    raise BadInput(f"verifier {verifier.name!r} needs task.reference")
                if inline:
                    # Fast path: cheap synchronous verdicts are made right here.
                    job.result = verifier.verify_inline(trajectory, spec)
                if job.result is None:
                    check = _Prepared(task.verifier, task.spec, task.reference, job)
                    check.verifier, check.spec = verifier, spec
                    prepared = [check]
        if job.result is not None or trajectory is None or prepared is None:
            assert job.result is not None
            return self._stamp(job.result, job)
        return trajectory, prepared, job

    def _prepare_checks(self, task: Task, job: _Job) -> list[_Prepared]:
        """Each check of ``task.checks``, resolved under its own boundary.

        A check that does not resolve (unknown verifier, bad spec, missing reference) gets
        its error on its own job, not the item's: composition decides, so a failed gate still
        wins over it.
        """
        prepared = []
        assert task.checks is not None
        for part in task.checks:
            reference = part.reference if part.reference is not None else task.reference
            sub = _Job(line=job.line, label=part.verifier)
            check = _Prepared(part.verifier, part.spec, reference, sub)
            with self._boundary(sub):
                check.verifier, check.spec, sub.label, _ = self._resolve(part.verifier, part.spec)
                if reference is None and check.verifier.reference_required:
                    raise BadInput(f"verifier {check.verifier.name!r} needs task.reference")
            prepared.append(check)
        return prepared

    def _resolve(
        self, name: str, raw: dict[str, Any] | None
    ) -> tuple[Verifier[Any], Spec, str, bool]:
        """``(verifier, validated spec, "name@version", inline)`` for a verifier name and spec.

        The one place a verifier and its spec are resolved, for single tasks and checks alike.

        Memoised per (name, spec text): on the inline path this lookup is most of the engine's
        own cost per item. Not ``sort_keys`` (see :meth:`_spec`).

        Raises:
            UnknownVerifier: no installed verifier has that name.
            BadInput: the spec does not validate.
        """
        key = (name, "" if not raw else json.dumps(raw, default=str))
        hit = self._resolved.get(key)
        if hit is None:
            verifier = self._verifier(name)
            spec = self._spec(verifier, raw)
            label = f"{verifier.name}@{verifier.version}"
            hit = (verifier, spec, label, self._has_inline(verifier))
            if len(self._resolved) > 4096:
                self._resolved.clear()
            self._resolved[key] = hit
        return hit

    async def _judge(self, trajectory: Trajectory, prepared: list[_Prepared], job: _Job) -> Result:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.settings.concurrency)
        async with self._semaphore, self._machine_slot():
            job.started = time.perf_counter()
            job.timeout_s = self._item_timeout(prepared)
            deadline = time.monotonic() + job.timeout_s
            task = trajectory.task
            if not task.checks:
                return await self._judge_check(trajectory, prepared[0], deadline)
            # Each check under its own boundary, so one check's error is its own part and
            # composition decides (a failed gate still wins over another check's error).
            for check in prepared:
                check.job.started, check.job.timeout_s = job.started, job.timeout_s
            parts = await asyncio.gather(
                *(self._judge_check(trajectory, check, deadline) for check in prepared)
            )
            job.label = "compose"
            return self._stamp(fold_checks(task, parts), job)

    async def _judge_check(
        self, trajectory: Trajectory, check: _Prepared, deadline: float
    ) -> Result:
        job = check.job
        if job.result is None:  # not already an error from _prepare_checks
            with self._boundary(job):
                if trajectory.task.checks:
                    task = Task(verifier=check.name, spec=check.raw, reference=check.reference)
                    trajectory = trajectory.model_copy(update={"task": task})
                job.result = await self._verify(trajectory, check, job, deadline)
        assert job.result is not None
        return self._stamp(job.result, job)

    def _boundary(self, job: _Job) -> _Boundary:
        """The one error boundary: any ``Exception`` raised in the block becomes ``job.result``.

        A sync context manager, so the streaming loop's inline stage and the judged task share
        it. ``BaseException`` (task cancellation, ``KeyboardInterrupt``) passes through.
        """
        return _Boundary(job, self.settings.timeout_s)

    @asynccontextmanager
    async def _machine_slot(self) -> AsyncIterator[None]:
        """One of the machine-wide slots (``machine_slots``) while an item is judged."""
        if self._machine_slots is None:
            yield
            return
        async with self._machine_slots.slot():
            yield

    def _item_timeout(self, prepared: list[_Prepared]) -> float:
        """Seconds an item may take.

        The engine's ``timeout_s``, or more where a verifier of the item declares a larger
        budget (``Verifier.budget_s``) plus ``_BUDGET_MARGIN_S``.

        An engine timeout must only ever mean that the verifier or the machine failed: if the
        engine cut an item off before its verifier's own limits (a code test's ``timeout_s``)
        ran out, a model could turn its certain 0 into an ``error`` (an abstain) by sleeping
        just under them. Checks run concurrently, so the largest budget counts. Warns once
        per verifier whose budget exceeds ``timeout_s`` (the CLI's ``--timeout``).
        """
        needed = self.settings.timeout_s
        for check in prepared:
            verifier = check.verifier
            if verifier is None or check.spec is None:  # did not resolve: errors, no budget
                continue
            budget = verifier.budget_s(check.spec)
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

    async def _verify(
        self, trajectory: Trajectory, check: _Prepared, job: _Job, deadline: float
    ) -> Result:
        """Cache lookup, then ``verify`` under the deadline with retries, then cache store."""
        verifier, spec = check.verifier, check.spec
        assert verifier is not None and spec is not None
        cache = self._open_cache() if verifier.cacheable else None
        key = None
        if cache is not None:
            key = cache.key_for(type(verifier), spec, trajectory, self.base_dir)
            hit = cache.get(key)
            if hit is not None:
                job.cached = True  # stamped by _stamp, with the rest
                return hit
        result = await self._verify_with_retries(verifier, trajectory, spec, job, deadline)
        if cache is not None and key is not None and result.status != "error":
            cache.put(key, result)
        return result

    async def _verify_with_retries(
        self,
        verifier: Verifier[Any],
        trajectory: Trajectory,
        spec: Spec,
        job: _Job,
        deadline: float,
    ) -> Result:
        """``verify`` under the deadline; an ``InfraError`` a retry can fix is retried.

        Not a boundary: a retry is decided here, then the last error is re-raised (with the
        attempt count on ``job``) for :meth:`_boundary` to turn into a result.
        """
        backoff = self.settings.retry_backoff_s
        job.attempts = 0
        while True:
            job.attempts += 1
            ctx = VerifierContext(
                deadline=deadline,
                base_dir=self.base_dir,
                workers=self._worker_pool(),
                sandboxes=self._sandboxes,
                logger=log,
                line=job.line,
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
                job.resources = ctx.resources()  # details["resources"] of its sandbox jobs
                if result.status == "fail":
                    _raise_if_starved(ctx, result)
                return result
            except InfraError as exc:
                if (
                    not exc.retryable
                    or job.attempts > self.settings.retries
                    or time.monotonic() + backoff >= deadline
                ):
                    raise
                log.warning("infra error in %s (attempt %d): %s", verifier.name, job.attempts, exc)
            finally:
                ctx.cleanup()
            await asyncio.sleep(backoff)
            backoff *= 2

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
    def _stamp(result: Result, job: _Job, *, passthrough: bool = False) -> Result:
        """The one place a result gets what the engine knows about its item.

        ``id``, ``verifier`` (``name@version``, ``compose``, or the name as given when it
        never resolved), ``cached``, ``duration_s`` (what the item took here: for a cache
        hit, the lookup), ``error.line`` (from the input record) and ``error.attempts``, and
        ``details["resources"]`` of the item's sandbox jobs. A ready-made result
        (``passthrough``) only gets its line. A verifier's own ``cached`` or ``id`` never
        survives: what the engine did not see happen is not stamped.
        """
        update: dict[str, Any] = {}
        error = result.error
        if error is not None:
            error_update: dict[str, Any] = {}
            if error.line is None and job.line is not None:
                error_update["line"] = job.line
            if job.attempts > 1:
                error_update["attempts"] = job.attempts
            if error_update:
                update["error"] = error.model_copy(update=error_update)
        if passthrough:
            return result.model_copy(update=update) if update else result
        update["id"] = job.ident
        update["verifier"] = job.label
        update["cached"] = job.cached
        update["duration_s"] = time.perf_counter() - job.started
        if job.resources is not None:
            update["details"] = {**result.details, "resources": job.resources}
        return result.model_copy(update=update)


class _Boundary:
    """:meth:`Engine._boundary`, as a class.

    Not ``@contextmanager``: a generator per item costs more than an inline verdict.
    """

    __slots__ = ("job", "timeout_s")

    def __init__(self, job: _Job, timeout_s: float) -> None:
        self.job = job
        self.timeout_s = timeout_s

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False  # no exception, or a BaseException: cancellation passes through
        self.job.result = _error_result(exc, self.job.timeout_s or self.timeout_s)
        return True


@dataclass(slots=True)
class _Prepared:
    """One check of an item (the item itself for a single verifier) and what it resolved to."""

    name: str
    raw: dict[str, Any] | None
    reference: Any
    job: _Job
    verifier: Verifier[Any] | None = None
    spec: Spec | None = None


@dataclass(slots=True)
class _Job:
    """What the engine learns about one item (or one check of it) on its way through."""

    line: int | None = None
    started: float = 0.0
    ident: str | None = None
    label: str = ""
    timeout_s: float | None = None
    attempts: int = 1
    cached: bool = False
    resources: dict[str, Any] | None = None
    result: Result | None = None


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


def _raise_if_starved(ctx: VerifierContext, result: Result) -> None:
    """A ``fail`` that stands on a job the machine starved of CPU is no score.

    Raises the ``InfraError`` that is retried and, when retries run out, becomes
    ``error/infra``.

    The job's budget is CPU time and the wall deadline only a backstop; the sandbox decides
    at the backstop whether the job was starved (see docs/sandbox.md, "Deadlines"), so a job
    that slept, blocked or spun on its own is never excused here. A trusted part of a job that
    keeps wall limits of its own (the code judge: per test, per build) applies the same rule
    inside it and reports a starved step as ``details["starved_step"]``.
    """
    starved = ctx.starved()
    if starved:
        count, what, evidence = len(starved), "sandbox job(s)", starved[0].starvation or {}
    else:
        step = result.details.get("starved_step")
        if not isinstance(step, dict):
            return
        count, what, evidence = 1, "timed step(s) in a sandbox job", step
    raise InfraError(
        f"{count} {what} ran out of wall time starved of CPU by machine load "
        f"(got {evidence.get('cpu_s', '?')} CPU-s in {evidence.get('wall_s', '?')} s; others "
        f"used {evidence.get('others_cpu_s', '?')} CPU-s of {evidence.get('cpus', '?')} CPUs): "
        "not the model's score",
        hint="the machine is overloaded: lower the engine's concurrency or the sandbox pool "
        "size, or give the sandboxes more CPUs",
    )


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


async def _aiter(items: Iterable[_T] | AsyncIterable[_T]) -> AsyncIterator[_T]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


async def in_input_order(
    items: Iterable[_T] | AsyncIterable[_T],
    start: Callable[[_T], asyncio.Task[Result] | Result],
    window: int,
) -> AsyncIterator[Result]:
    """``start(item)`` for each item, results yielded in input order while later ones run.

    ``start`` returns a ready result or a task. At most ``window`` entries are pending: the
    head is awaited once the window is full, so memory stays flat on inputs of any length,
    and a head that is ready is yielded at once. Tasks still pending when the consumer stops
    are cancelled. The engine's stream and ``RayScorer.stream`` both use it.
    """
    pending: deque[asyncio.Task[Result] | Result] = deque()
    try:
        async for item in _aiter(items):
            pending.append(start(item))
            while pending and (
                isinstance(pending[0], Result) or pending[0].done() or len(pending) >= window
            ):
                head = pending.popleft()
                yield head if isinstance(head, Result) else await head
        while pending:
            head = pending.popleft()
            yield head if isinstance(head, Result) else await head
    finally:
        for task in pending:
            if isinstance(task, asyncio.Task):
                task.cancel()


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
