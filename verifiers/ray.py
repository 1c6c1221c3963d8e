"""Scale-out on Ray: one warm :class:`~verifiers.Engine` per actor, items routed by task.

``RayScorer`` scores trajectories on a Ray cluster with the engine's own surface (``score``,
``score_async``, ``stream`` in input order)::

    from verifiers.ray import RayScorer
    with RayScorer(num_actors=4, settings=EngineSettings(sandbox="local")) as scorer:
        results = scorer.score(trajectories)

and on the command line: ``verifiers score FILE --ray auto`` (or ``--ray HOST:PORT``).

Why each piece is the way it is:

- **Actors, each with one warm engine.** Sandboxed verification is CPU-bound and the warm
  state (sandbox runners, worker processes, the result cache) is what makes it fast, so each
  actor is a long-lived async Ray actor hosting one :class:`~verifiers.Engine` on the
  actor's own event loop. Actors are placed one per node by default (``num_actors``
  defaults to the number of alive nodes; up to that many go in a ``STRICT_SPREAD`` placement
  group, since Ray's plain ``SPREAD`` is best effort; more than that use ``SPREAD``),
  ``num_cpus=cpus_per_actor``.
- **Routing by task hash** (rendezvous hashing over the live actors): every rollout of a GRPO
  group carries the same task, so the group lands on one actor, whose cache and warm runtime
  get the repeats. When an actor dies only its own keys move.
- **Bounded in-flight work.** At most ``max_in_flight`` items per actor are submitted at once
  (a semaphore per actor on the driver), and ``stream`` keeps a bounded window of items
  ahead of the one it yields next, so neither the driver nor Ray's object store grows with
  the input. The actor's ``max_concurrency`` is ``max_in_flight`` plus two, so control calls
  (``metrics``, ``close``) are answered beside a full load; the engine's ``concurrency``
  bounds what runs inside.
- **Deadlines stay in the engine.** Ray cannot interrupt a running task on a normal actor, so
  per-item deadlines are the engine's (which kills processes). The driver only adds a
  generous ``call_timeout_s`` so a wedged node cannot hang the run; past it the item is
  ``error/infra``.
- **Faults are retries, never scores.** An actor (or its node) that dies mid-batch raises
  ``RayActorError`` for its unfinished items on the driver; those items go to another live
  actor (``stats.retried`` counts them; a result carries ``error.attempts`` when it ends
  in error), up to ``max_attempts`` tries. Each input position is filled exactly once, so
  nothing is duplicated, and an item that no actor could take is ``error/infra``, never a
  0. Every actor runs the same runtime definitions (``sandbox/images``), so a retried item
  gets the same verdict on another node.
- **One cluster-wide limit.** Per-process limits multiply with the number of actors (64 ranks
  each think they own the machine). ``cluster_concurrency=N`` creates (or joins) a named
  detached actor, :class:`ClusterLimit`, that hands out N leases; every actor holds one per
  item in verification. A lease lives ``lease_ttl_s`` (default 30 s) unless its holder
  renews it: each actor heartbeats its leases every third of that, so a holder that died with
  its driver (nobody left to say so) frees its leases within one TTL, and the driver that sees
  an actor die returns its leases at once. A crash never leaks capacity.
- **Placement has a deadline.** An item waits at most ``place_timeout_s`` for a slot on a live
  actor (all actors busy, or dying); past it, or when no live actor is left, it is
  ``error/infra`` with ``error.attempts``. A node whose raylet dies takes its actors with it:
  once Ray declares the node dead (its health check: ``RAY_health_check_*`` on the head), the
  actors' unfinished calls fail with ``ActorDiedError`` and are retried elsewhere; an actor
  Ray reports unavailable is routed around the same way (never retried in place).
- **Metrics per actor.** Each actor counts what its engine returned under the reward
  server's metric names (``verifiers_results_total{status,verifier}``,
  ``verifiers_errors_total{kind,verifier}``, ``verifiers_item_seconds``,
  ``verifiers_items_in_flight``); :meth:`RayScorer.metrics` collects them with the actor's
  index and node, :meth:`RayScorer.metrics_text` renders them as Prometheus text with
  ``actor`` and ``node`` labels, and ``stats`` says where items ran (``by_node``,
  ``by_actor``) and how many tries each took (``attempts``).

``ray`` is imported on first use (``pip install 'verifiers[ray]'``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import Engine, EngineSettings, in_input_order
from .errors import MissingDependency
from .types import Result, Trajectory

__all__ = ["ClusterLimit", "RayScorer", "RayStats"]

Item = Trajectory | Result | dict[str, Any]

NAMESPACE = "verifiers"
"""The Ray namespace of the named limit actor."""


def _ray() -> Any:
    return MissingDependency.require("ray", "ray")


class ClusterLimit:
    """A cluster-wide budget of leases (run as a named, detached Ray actor).

    ``acquire(holder)`` waits for a free lease and returns its number; ``release(holder,
    lease)`` gives it back; ``renew(holder)`` extends every lease the holder has by
    ``ttl_s``; ``release_holder(holder)`` returns every lease a dead holder still had.
    Holders are actor ids, which Ray never reuses.

    A lease that is not renewed within ``ttl_s`` expires and is given to the next waiter:
    the detached limit outlives every driver, so a holder that died together with the driver
    that could have said so must not keep its leases forever.
    """

    def __init__(self, size: int, ttl_s: float = 30.0) -> None:
        self.size = size
        self.ttl_s = ttl_s
        self._leases: dict[int, tuple[str, float]] = {}
        """lease -> (holder, expires at, monotonic)."""
        self._next = 0
        self._peak = 0
        self._expired = 0
        self._changed: asyncio.Event | None = None

    def _reap(self) -> float | None:
        """Drop expired leases; the seconds until the next one expires (None: none held)."""
        now = time.monotonic()
        soonest: float | None = None
        for lease, (_, expires) in list(self._leases.items()):
            if expires <= now:
                del self._leases[lease]
                self._expired += 1
            elif soonest is None or expires - now < soonest:
                soonest = expires - now
        return soonest

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def acquire(self, holder: str) -> int:
        """Wait for a free slot and lease it to ``holder``; returns the lease number."""
        while True:
            soonest = self._reap()
            if len(self._leases) < self.size:
                self._next += 1
                self._leases[self._next] = (holder, time.monotonic() + self.ttl_s)
                self._peak = max(self._peak, len(self._leases))
                return self._next
            if self._changed is None or self._changed.is_set():
                self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=soonest)
            except TimeoutError:  # the soonest lease expires now: reap it on the next turn
                pass

    def release(self, holder: str, lease: int) -> None:
        """Give back one lease of ``holder`` (a lease it does not hold is ignored)."""
        held = self._leases.get(lease)
        if held is not None and held[0] == holder:
            del self._leases[lease]
            self._wake()

    def renew(self, holder: str) -> int:
        """Extend the holder's leases by ``ttl_s``; returns how many it holds."""
        expires = time.monotonic() + self.ttl_s
        mine = [lease for lease, (who, _) in self._leases.items() if who == holder]
        for lease in mine:
            self._leases[lease] = (holder, expires)
        return len(mine)

    def release_holder(self, holder: str) -> int:
        """Give back every lease of ``holder`` (an engine that closed); returns how many."""
        mine = [lease for lease, (who, _) in self._leases.items() if who == holder]
        for lease in mine:
            del self._leases[lease]
        if mine:
            self._wake()
        return len(mine)

    def state(self) -> dict[str, Any]:
        """Size, leases held now, the most held at once, leases expired, lease time (reaps first)."""
        self._reap()
        return {
            "size": self.size,
            "held": len(self._leases),
            "peak": self._peak,
            "expired": self._expired,
            "ttl_s": self.ttl_s,
        }


class _EngineActor:
    """One warm engine inside a Ray actor (methods run on the actor's event loop)."""

    def __init__(
        self,
        settings: dict[str, Any],
        base_dir: str | None,
        limit: str | None,
        namespace: str,
        lease_ttl_s: float = 30.0,
    ) -> None:
        self._settings = EngineSettings.model_validate(settings)
        self._base_dir = base_dir
        self._engine: Engine | None = None
        ray = _ray()
        self._limit: Any = ray.get_actor(limit, namespace=namespace) if limit else None
        self._holder = ray.get_runtime_context().get_actor_id()
        self._lease_ttl_s = lease_ttl_s
        self._heartbeat: asyncio.Task[None] | None = None
        self._metrics = _ActorMetrics()

    async def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._engine is None:
            self._engine = Engine(self._settings, base_dir=self._base_dir)
        limit = self._limit
        if limit is not None and self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._renew_leases())
        self._metrics.in_flight += len(items)
        try:
            lease = None if limit is None else await limit.acquire.remote(self._holder)
            try:
                results = await self._engine.score(items)
            finally:
                if limit is not None and lease is not None:
                    try:  # awaited: the lease is free before the result is
                        await limit.release.remote(self._holder, lease)
                    except Exception:  # the limit actor is gone, and the lease with it
                        pass
        finally:
            self._metrics.in_flight -= len(items)
        for result in results:
            self._metrics.add(result)
        return [r.json_safe().model_dump(mode="json") for r in results]

    async def _renew_leases(self) -> None:
        """Keep this actor's leases alive while it lives (they expire a TTL after it dies)."""
        while True:
            await asyncio.sleep(self._lease_ttl_s / 3)
            try:
                await self._limit.renew.remote(self._holder)
            except Exception:  # the limit actor is gone or restarting: try again next beat
                pass

    def where(self) -> dict[str, Any]:
        ray = _ray()
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}

    def metrics(self) -> dict[str, Any]:
        """This actor's counters (see :class:`_ActorMetrics`)."""
        return self._metrics.snapshot()

    async def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        if self._engine is not None:
            await self._engine.aclose()
            self._engine = None
        if self._limit is not None:
            await self._limit.release_holder.remote(self._holder)


class _ActorMetrics:
    """What one actor's engine returned, under the reward server's metric names.

    Labels are bounded the server's way (:func:`verifiers.rl_adapters.server.metric_label`:
    a registered verifier name, else ``other``), since clients choose the names they send.
    """

    def __init__(self) -> None:
        self.results: Counter[tuple[str, str]] = Counter()
        self.errors: Counter[tuple[str, str]] = Counter()
        self.seconds: dict[str, list[float]] = {}
        self.in_flight = 0

    def add(self, result: Result) -> None:
        from .rl_adapters.server import metric_label

        label = metric_label(result.verifier)
        self.results[(result.status, label)] += 1
        if result.error is not None:
            self.errors[(result.error.kind, label)] += 1
        total = self.seconds.setdefault(label, [0.0, 0.0])
        total[0] += result.duration_s
        total[1] += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "verifiers_results_total": [
                {"status": s, "verifier": v, "value": n} for (s, v), n in self.results.items()
            ],
            "verifiers_errors_total": [
                {"kind": k, "verifier": v, "value": n} for (k, v), n in self.errors.items()
            ],
            "verifiers_item_seconds": [
                {"verifier": v, "sum": t[0], "count": int(t[1])} for v, t in self.seconds.items()
            ],
            "verifiers_items_in_flight": self.in_flight,
        }


@dataclass
class RayStats:
    """What a :class:`RayScorer` did: where items ran, and how many were retried."""

    items: int = 0
    """Items sent to actors (ready-made results pass through and are not counted)."""
    retried: int = 0
    """Extra attempts after an actor died (an item tried twice counts 1)."""
    dead_actors: int = 0
    """Actors seen dead."""
    by_node: Counter[str] = field(default_factory=Counter)
    """Items that got their result on each node (node id)."""
    by_actor: Counter[int] = field(default_factory=Counter)
    """Items that got their result from each actor (its index)."""
    attempts: Counter[int] = field(default_factory=Counter)
    """Items by the number of actor calls they took (``{1: n}`` when nothing died)."""
    failed: int = 0
    """Items that ended as ``error/infra`` because no actor could take them."""

    def as_dict(self) -> dict[str, Any]:
        """The counters as plain JSON data (counter keys as strings)."""
        return {
            "items": self.items,
            "retried": self.retried,
            "dead_actors": self.dead_actors,
            "failed": self.failed,
            "by_node": dict(self.by_node),
            "by_actor": {str(k): v for k, v in sorted(self.by_actor.items())},
            "attempts": {str(k): v for k, v in sorted(self.attempts.items())},
        }


@dataclass
class _Actor:
    index: int
    handle: Any
    actor_id: str
    node: str
    pid: int
    slots: asyncio.Semaphore | None = None
    dead: bool = False


def _task_key(item: dict[str, Any]) -> bytes:
    """What routes an item: its task (a GRPO group shares it), canonical JSON."""
    task = item.get("task")
    text = json.dumps(task, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class RayScorer:
    """Scores items on Ray actors, each hosting one warm engine (module docstring).

    Args:
        num_actors: Engine actors to start (default: one per alive node).
        settings: The engine settings every actor uses (default: ``EngineSettings.from_env()``).
        address: Ray cluster to join (``"auto"``, ``"HOST:PORT"``); ``None``: the current
            Ray session, or ``ray.init()`` of a local one.
        base_dir: Where relative artifact paths resolve (must be readable on every node).
        cpus_per_actor: ``num_cpus`` of each actor (Ray's scheduling unit).
        max_in_flight: Items submitted to one actor at once (backpressure).
        max_attempts: Tries per item when actors die (then ``error/infra``).
        call_timeout_s: Longest wait for one actor call before the item is ``error/infra``
            (the engine's own per-item deadline is what normally ends an item).
        cluster_concurrency: Items in verification across the whole cluster, enforced by the
            named detached actor ``limit_name`` (``None``: no cluster-wide limit).
        limit_name: Name of that actor in namespace ``verifiers``; scorers with the same name
            share one budget.
        placement: ``"SPREAD"`` (one actor per node: a ``STRICT_SPREAD`` placement group while
            ``num_actors`` <= nodes, else Ray's ``SPREAD``) or ``"DEFAULT"`` (Ray packs them).
        start_timeout_s: Longest wait for the actors to be placed and started.
        place_timeout_s: Longest an item waits for a slot on a live actor before it is
            ``error/infra`` (default: ``call_timeout_s``).
        lease_ttl_s: How long a cluster-limit lease outlives its holder's last heartbeat
            (actors renew every third of it). Only for a limit this scorer creates; one that
            already exists by ``limit_name`` keeps its own.

    Raises:
        MissingDependency: Ray is not installed (``pip install 'verifiers[ray]'``).
        ValueError: an argument out of range.
        RuntimeError: the actors could not be placed within ``start_timeout_s``.
    """

    def __init__(
        self,
        num_actors: int | None = None,
        *,
        settings: EngineSettings | None = None,
        address: str | None = None,
        base_dir: Path | str | None = None,
        cpus_per_actor: float = 1.0,
        max_in_flight: int = 8,
        max_attempts: int = 3,
        call_timeout_s: float = 3600.0,
        cluster_concurrency: int | None = None,
        limit_name: str = "verifiers-cluster-limit",
        placement: str = "SPREAD",
        start_timeout_s: float = 120.0,
        place_timeout_s: float | None = None,
        lease_ttl_s: float = 30.0,
    ) -> None:
        problems = []
        if num_actors is not None and num_actors < 1:
            problems.append(f"num_actors={num_actors}: must be >= 1")
        if max_in_flight < 1:
            problems.append(f"max_in_flight={max_in_flight}: must be >= 1")
        if max_attempts < 1:
            problems.append(f"max_attempts={max_attempts}: must be >= 1")
        if cpus_per_actor < 0:
            problems.append(f"cpus_per_actor={cpus_per_actor}: must be >= 0")
        if cluster_concurrency is not None and cluster_concurrency < 1:
            problems.append(f"cluster_concurrency={cluster_concurrency}: must be >= 1 or None")
        if place_timeout_s is not None and not place_timeout_s > 0:
            problems.append(f"place_timeout_s={place_timeout_s}: must be > 0 or None")
        if not lease_ttl_s > 0:
            problems.append(f"lease_ttl_s={lease_ttl_s}: must be > 0")
        if placement not in ("SPREAD", "DEFAULT"):
            problems.append(f"placement={placement!r}: must be 'SPREAD' or 'DEFAULT'")
        if problems:
            raise ValueError("RayScorer: " + "; ".join(problems))
        ray = _ray()
        self._ray = ray
        self.settings = settings or EngineSettings.from_env()
        self.max_in_flight = max_in_flight
        self.max_attempts = max_attempts
        self.call_timeout_s = call_timeout_s
        self.place_timeout_s = call_timeout_s if place_timeout_s is None else place_timeout_s
        self.stats = RayStats()
        self._owns_ray = False
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
            self._owns_ray = True
        nodes = max(1, sum(1 for n in ray.nodes() if n.get("Alive")))
        if num_actors is None:
            num_actors = nodes
        self.limit_name: str | None = None
        if cluster_concurrency is not None:
            limit_cls = ray.remote(num_cpus=0)(ClusterLimit)
            limit_cls.options(
                name=limit_name,
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
            ).remote(cluster_concurrency, lease_ttl_s)
            self.limit_name = limit_name
        remote_cls = ray.remote(_EngineActor)
        base = None if base_dir is None else str(Path(base_dir).resolve())
        payload = self.settings.model_dump(mode="json")
        strategies: list[Any] = [placement] * num_actors
        self._group: Any = None
        if placement == "SPREAD" and 1 < num_actors <= nodes:
            # Ray's SPREAD strategy is best effort (two actors may share a node); a
            # STRICT_SPREAD placement group puts each actor on its own node.
            from ray.util.placement_group import placement_group
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            self._group = placement_group(
                [{"CPU": cpus_per_actor}] * num_actors, strategy="STRICT_SPREAD"
            )
            strategies = [
                PlacementGroupSchedulingStrategy(self._group, placement_group_bundle_index=i)
                for i in range(num_actors)
            ]
        handles = [
            remote_cls.options(
                num_cpus=cpus_per_actor,
                # + room for control calls (metrics, where, close) beside a full load
                max_concurrency=max_in_flight + 2,
                scheduling_strategy=strategy,
            ).remote(payload, base, self.limit_name, NAMESPACE, lease_ttl_s)
            for strategy in strategies
        ]
        try:
            where = ray.get([h.where.remote() for h in handles], timeout=start_timeout_s)
        except Exception as exc:
            for h in handles:
                ray.kill(h)
            self._remove_group()
            free = ray.available_resources().get("CPU", 0.0)
            raise RuntimeError(
                f"RayScorer: could not start {num_actors} actor(s) with num_cpus="
                f"{cpus_per_actor} within {start_timeout_s}s ({free} CPUs free in the "
                f"cluster): lower num_actors or cpus_per_actor ({type(exc).__name__})"
            ) from None
        self._actors = [
            _Actor(i, h, h._actor_id.hex(), str(w["node"]), int(w["pid"]))
            for i, (h, w) in enumerate(zip(handles, where, strict=True))
        ]
        self._closed = False
        self._lock = threading.Lock()
        self._slots_loop: asyncio.AbstractEventLoop | None = None

    # -- introspection -----------------------------------------------------------------

    @property
    def actors(self) -> list[dict[str, Any]]:
        """Each actor's index, node id, process id and liveness (as last seen)."""
        return [
            {"index": a.index, "node": a.node, "pid": a.pid, "alive": not a.dead}
            for a in self._actors
        ]

    def metrics(self, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Each live actor's counters, under the reward server's metric names.

        Each row has the actor's ``actor`` index, ``node`` and ``pid``. An actor that does not
        answer within ``timeout_s`` is left out (``alive`` is as last seen).
        """
        ray = self._ray
        out = []
        for actor in self._actors:
            row: dict[str, Any] = {"actor": actor.index, "node": actor.node, "pid": actor.pid}
            if not actor.dead:
                try:
                    row.update(ray.get(actor.handle.metrics.remote(), timeout=timeout_s))
                except Exception:  # dead or wedged: reported without counters
                    pass
            row["alive"] = not actor.dead
            out.append(row)
        return out

    def metrics_text(self, timeout_s: float = 30.0) -> str:
        """:meth:`metrics` as Prometheus text.

        The reward server's names, plus ``actor`` and ``node`` labels (one series per actor),
        and the ``verifiers_ray_*`` driver counters.
        """
        return _prometheus(self.metrics(timeout_s), self.stats)

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close every actor's engine and end the actors.

        Idempotent; the cluster stays up (the named limit actor too: it is shared by name). A
        Ray connection this scorer made is closed; one the caller made stays.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        ray = self._ray
        live = [a for a in self._actors if not a.dead]
        try:
            ray.get([a.handle.close.remote() for a in live], timeout=60)
        except Exception:  # a dead or wedged actor: killed below anyway
            pass
        for a in self._actors:
            try:
                ray.kill(a.handle)
            except Exception:
                pass
        self._remove_group()
        if self._owns_ray:  # connected by this scorer (the CLI): disconnect again
            ray.shutdown()

    def _remove_group(self) -> None:
        if self._group is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(self._group)
            except Exception:  # already gone with its cluster
                pass
            self._group = None

    def __enter__(self) -> RayScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RayScorer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- scoring -----------------------------------------------------------------------

    def score(self, items: Iterable[Item]) -> list[Result]:
        """Score ``items`` (blocking); results in input order.

        Raises:
            RuntimeError: called from inside a running event loop (use :meth:`score_async`).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.score_async(items))
        raise RuntimeError("RayScorer.score() inside an event loop: await score_async()")

    async def score_async(self, items: Iterable[Item] | AsyncIterable[Item]) -> list[Result]:
        """Score ``items`` without blocking the caller's loop; results in input order."""
        return [r async for r in self.stream(items)]

    async def stream(self, items: Iterable[Item] | AsyncIterable[Item]) -> AsyncIterator[Result]:
        """Yield one result per item, in input order, with a bounded window in flight."""
        if self._closed:
            raise RuntimeError("this RayScorer is closed")
        loop = asyncio.get_running_loop()
        if self._slots_loop is not loop:
            # The per-actor bounds belong to one event loop; concurrent streams on that loop
            # (a reward manager's overlapping batches) share them.
            for actor in self._actors:
                actor.slots = asyncio.Semaphore(self.max_in_flight)
            self._slots_loop = loop
        window = 2 * self.max_in_flight * max(len(self._actors), 1)
        async for result in in_input_order(items, self._start, window):
            yield result

    def _start(self, item: Item) -> asyncio.Task[Result] | Result:
        if isinstance(item, Result):
            return item
        payload = item.model_dump(mode="json") if isinstance(item, Trajectory) else item
        return asyncio.get_running_loop().create_task(self._run(payload))

    def _route(self, key: bytes) -> _Actor | None:
        """Rendezvous hashing: the live actor with the highest hash of (key, actor)."""
        best: _Actor | None = None
        best_score = b""
        for actor in self._actors:
            if actor.dead:
                continue
            score = hashlib.blake2b(key + actor.actor_id.encode(), digest_size=8).digest()
            if best is None or score > best_score:
                best, best_score = actor, score
        return best

    async def _run(self, payload: dict[str, Any]) -> Result:
        ray = self._ray
        self.stats.items += 1
        key = _task_key(payload)
        attempts = 0
        placed_by = time.monotonic() + self.place_timeout_s
        last = "no live Ray actor"
        while attempts < self.max_attempts:
            actor = self._route(key)
            if actor is None:
                break
            assert actor.slots is not None
            remaining = placed_by - time.monotonic()
            try:
                await asyncio.wait_for(actor.slots.acquire(), timeout=max(remaining, 0.0))
            except TimeoutError:
                last = f"no slot on a live Ray actor within place_timeout_s={self.place_timeout_s}s"
                break
            try:
                if actor.dead:  # died while this item waited for a slot: not an attempt
                    continue
                attempts += 1
                if attempts > 1:
                    self.stats.retried += 1
                ref = actor.handle.score.remote([payload])
                try:
                    [raw] = await asyncio.wait_for(ref, self.call_timeout_s)
                except ray.exceptions.ActorUnavailableError as exc:  # before its base class
                    # Unreachable (its node may be going): route around it, never retry in
                    # place (that would spend every attempt on one lost node).
                    last = f"Ray actor {actor.index} unavailable: {exc}"
                    self._mark_dead(actor)
                    continue
                except ray.exceptions.RayActorError as exc:
                    last = f"Ray actor {actor.index} on node {actor.node[:12]} died: {exc}"
                    self._mark_dead(actor)
                    continue
                except TimeoutError:
                    ray.cancel(ref)
                    self.stats.failed += 1
                    return self._infra(
                        payload,
                        f"Ray actor {actor.index} gave no result within {self.call_timeout_s}s",
                        attempts,
                    )
                except Exception as exc:  # a bug in an actor is infra, never a score
                    self.stats.failed += 1
                    return self._infra(payload, f"Ray actor call failed: {exc}"[:2000], attempts)
            finally:
                actor.slots.release()
            self.stats.by_node[actor.node] += 1
            self.stats.by_actor[actor.index] += 1
            self.stats.attempts[attempts] += 1
            return Result.model_validate(raw)
        self.stats.failed += 1
        return self._infra(payload, f"{last} (after {attempts} attempt(s))", max(attempts, 1))

    def _mark_dead(self, actor: _Actor) -> None:
        if actor.dead:
            return
        actor.dead = True
        self.stats.dead_actors += 1
        if self.limit_name is not None:
            try:
                limit = self._ray.get_actor(self.limit_name, namespace=NAMESPACE)
                limit.release_holder.remote(actor.actor_id)
            except Exception:  # the limit actor itself is gone: nothing to return
                pass

    @staticmethod
    def _infra(payload: dict[str, Any], message: str, attempts: int) -> Result:
        result = Result.errored("infra", message)
        error = result.error
        assert error is not None
        update: dict[str, Any] = {"error": error.model_copy(update={"attempts": attempts})}
        if isinstance(payload.get("id"), str):
            update["id"] = payload["id"]
        return result.model_copy(update=update)


def _prometheus(actors: list[dict[str, Any]], stats: RayStats) -> str:
    """Prometheus exposition text of per-actor counters (see :meth:`RayScorer.metrics_text`)."""

    def esc(value: Any) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    def labels(pairs: dict[str, Any]) -> str:
        return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in pairs.items()) + "}"

    lines: list[str] = []

    def family(name: str, kind: str, about: str) -> None:
        lines.extend([f"# HELP {name} {about}", f"# TYPE {name} {kind}"])

    per_actor = [(a, {"actor": a["actor"], "node": a["node"]}) for a in actors]
    for name, about, keys in (
        ("verifiers_results_total", "Results by status and verifier", ("status", "verifier")),
        (
            "verifiers_errors_total",
            "Unjudged results by error kind and verifier",
            ("kind", "verifier"),
        ),
    ):
        family(name, "counter", about)
        for a, who in per_actor:
            for row in a.get(name, []):
                pairs = {**who, **{key: row[key] for key in keys}}
                lines.append(f"{name}{labels(pairs)} {row['value']}")
    family("verifiers_item_seconds", "summary", "Per-item verification time")
    for a, who in per_actor:
        for row in a.get("verifiers_item_seconds", []):
            tags = labels({**who, "verifier": row["verifier"]})
            lines.append(f"verifiers_item_seconds_sum{tags} {row['sum']}")
            lines.append(f"verifiers_item_seconds_count{tags} {row['count']}")
    family("verifiers_items_in_flight", "gauge", "Items being scored")
    for a, who in per_actor:
        if "verifiers_items_in_flight" in a:
            lines.append(f"verifiers_items_in_flight{labels(who)} {a['verifiers_items_in_flight']}")
    family("verifiers_ray_actor_up", "gauge", "Whether the driver last saw the actor alive")
    for a, who in per_actor:
        lines.append(f"verifiers_ray_actor_up{labels(who)} {1 if a['alive'] else 0}")
    family("verifiers_ray_retried_total", "counter", "Extra actor calls after an actor died")
    lines.append(f"verifiers_ray_retried_total {stats.retried}")
    return "\n".join(lines) + "\n"


def wait_for_nodes(count: int, timeout_s: float = 60.0) -> None:
    """Block until the connected cluster has ``count`` alive nodes (for tests and scripts).

    Raises:
        TimeoutError: fewer nodes after ``timeout_s``.
    """
    ray = _ray()
    deadline = time.monotonic() + timeout_s
    while True:
        alive = sum(1 for n in ray.nodes() if n.get("Alive"))
        if alive >= count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{alive} of {count} Ray nodes alive after {timeout_s}s")
        time.sleep(0.2)
