"""``verifiers serve``: the reward server (FastAPI + uvicorn).

Endpoints:

- ``POST /v1/score``: ``{"trajectories": [...]}`` -> ``{"results": [...]}``, our own schema
  (docs/format.md), results in input order. An invalid trajectory gets its own ``bad_input``
  result; the batch is never rejected for one bad item.
- ``POST /get_reward`` (alias ``/v1/openrlhf``): OpenRLHF's protocol,
  ``{"query", "prompts", "labels"}`` -> ``{"rewards", "scores", "extra_logs"}``.
- ``POST /verify``: NeMo-Gym's resources-server verify (``BaseVerifyRequest`` ->
  ``BaseVerifyResponse``); an unjudged rollout is ``reward: null``, ``mask_sample: true``,
  never 0 (see :mod:`verifiers.rl_adapters.nemo_gym`).
- ``GET /healthz``: 200 ``{"status": "ok"}``; 503 ``draining`` once shutdown began.
- ``GET /metrics``: Prometheus text: requests by endpoint and code, results by status and
  verifier, request and per-item latency histograms, items in flight, machine slots held,
  warm sandbox workers by state (busy, idle, starting) and per runtime, runners recycled by
  runtime and reason (``verifiers_sandbox_recycled_total{runtime,reason}``).

Limits: bodies over ``--max-body-mb`` get 413 (checked on ``Content-Length`` and while
reading a chunked body), batches over ``--max-items`` get 413, malformed JSON or a body that
does not fit the schema gets 422 with the offending field, length mismatches get 400. Any
exception inside scoring becomes an ``error`` result (the engine's boundary), so no input
crashes the server.

Shutdown: on SIGINT/SIGTERM uvicorn stops accepting connections, ``/healthz`` turns 503,
in-flight requests finish (up to ``--graceful-timeout-s``), then the engine closes its worker
processes and sandboxes.

One engine serves all requests, so ``--concurrency`` bounds items in verification across
concurrent requests; scale out with more instances behind a load balancer. OpenRLHF sends
one rollout per request; with ``--group-size`` an unjudged rollout waits for its prompt's
group on this server, so route a prompt's rollouts to one server.

Metric labels are bounded: the ``verifier`` label is a registered verifier name or ``other``
(clients choose the names they send), and errors are counted by ``kind``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifiers._machine import MachineSlots, machine_slots_for
from verifiers.engine import Engine, EngineSettings
from verifiers.errors import MissingDependency
from verifiers.types import Result

from ._extra import parse_components
from ._ors_hook import mount_ors
from ._rows import TaskDefaults
from .nemo_gym import verify_item, verify_reply
from .openrlhf import (
    DEFAULT_EOS_TOKENS,
    SERVER_FLAGS,
    OpenRLHFRequest,
    OpenRLHFResponse,
    OpenRLHFScoring,
)

__all__ = [
    "BodyLimit",
    "RequestMetrics",
    "ScoreRequest",
    "ScoreResponse",
    "ServerSettings",
    "create_app",
    "main",
    "write_openapi",
]

log = logging.getLogger("verifiers.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


_TIME_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_RESOURCE_LABELS = ["verifier", "runtime"]
_HISTOGRAMS: tuple[tuple[str, str, list[str], tuple[float, ...]], ...] = (
    (
        "verifiers_request_seconds",
        "Request latency",
        ["endpoint"],
        (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    ),
    (
        "verifiers_item_seconds",
        "Per-item verification time",
        ["verifier"],
        (0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120),
    ),
    (
        "verifiers_sandbox_wall_seconds",
        "Sandbox wall time per item",
        _RESOURCE_LABELS,
        _TIME_BUCKETS,
    ),
    (
        "verifiers_sandbox_cpu_seconds",
        "Sandbox CPU seconds per item",
        _RESOURCE_LABELS,
        _TIME_BUCKETS,
    ),
    (
        "verifiers_sandbox_peak_memory_mb",
        "Peak memory of an item's largest sandbox job, MiB",
        _RESOURCE_LABELS,
        (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    ),
)
"""Every histogram of ``/metrics``: name, help, labels, buckets."""
_RESOURCE_OBSERVATIONS: tuple[tuple[str, str], ...] = (
    ("verifiers_sandbox_wall_seconds", "wall_s"),
    ("verifiers_sandbox_cpu_seconds", "cpu_s"),
    ("verifiers_sandbox_peak_memory_mb", "peak_memory_mb"),
)
"""Per-item sandbox resources (``details["resources"]``, stamped by the engine for every item
that ran sandbox jobs): histogram and key in the resources dict. What operators watch for
loops and leaks."""


class ServerSettings(BaseModel):
    """Everything ``verifiers serve`` can be told."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: EngineSettings = Field(default_factory=EngineSettings.from_env)
    """The engine behind every endpoint."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    """Larger request bodies get 413."""
    max_items: int = Field(default=8192, gt=0)
    """Larger batches get 413."""
    verifier: str | None = None
    """Default verifier for OpenRLHF labels that are plain references."""
    spec: dict[str, Any] | None = None
    """Its settings."""
    invalid_score: float | None = None
    """OpenRLHF value for an unjudged sample with no group to take a mean from (finite; unset:
    ``/get_reward`` needs ``group_size``)."""
    components: list[str] = Field(default_factory=list)
    """Component names in OpenRLHF ``extra_logs`` (a fixed key set for every rollout)."""
    group_size: int | None = Field(default=None, ge=1)
    """OpenRLHF rollouts per prompt: unjudged rollouts take their group's judged mean."""
    group_wait_s: float = Field(default=60.0, ge=0)
    """Longest wait of an unjudged rollout for its group."""
    base_dir: str | None = None
    """Where relative artifact paths in ``/v1/score`` resolve (default: the working dir)."""
    machine_concurrency: int | None = None
    """Machine-wide limit shared with other processes on the host (``None``: off)."""


class ScoreRequest(BaseModel):
    """``POST /v1/score`` body."""

    model_config = ConfigDict(extra="forbid")

    trajectories: list[dict[str, Any]]
    """Trajectories as in docs/format.md. Each is validated on its own: an invalid one gets
    its own ``bad_input`` result and the rest are scored."""


class ScoreResponse(BaseModel):
    """``POST /v1/score`` response."""

    results: list[Result]
    """One result per trajectory, in input order."""


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``limit`` bytes, declared or streamed (chunked)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def _reject(self, send: Send) -> None:
        body = json.dumps({"detail": f"request body larger than {self.limit} bytes"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await self._reject(send)
                    return
        # Read the whole body here (bounded by the limit) so an oversized chunked body is
        # refused before the framework sees it, then replay it to the app.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class RequestMetrics:
    """ASGI middleware: count requests by endpoint and status, time them (413s included).

    Pure ASGI rather than ``@app.middleware("http")``, which costs a task and a stream per
    request and showed up in the loopback benchmark.
    """

    def __init__(self, app: ASGIApp, requests: Any, seconds: Any) -> None:
        self.app = app
        self.requests = requests
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def tracking_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        finally:
            path = scope.get("path", "")
            endpoint = path if path in _KNOWN_PATHS else "other"
            self.requests.labels(endpoint, str(status)).inc()
            self.seconds.labels(endpoint).observe(time.perf_counter() - started)


def create_app(settings: ServerSettings | None = None) -> Any:
    """The FastAPI application (also usable under any ASGI server, or ``httpx.ASGITransport``).

    Raises:
        MissingDependency: FastAPI or prometheus-client is not installed (``[serve]``).
    """
    try:
        from fastapi import FastAPI, HTTPException
        from fastapi.responses import JSONResponse, PlainTextResponse
        from prometheus_client import (
            CONTENT_TYPE_LATEST,
            CollectorRegistry,
            Counter,
            Gauge,
            Histogram,
            generate_latest,
        )
    except ImportError as exc:
        raise MissingDependency(exc.name or "fastapi", "serve") from None

    cfg = settings or ServerSettings()
    registry = CollectorRegistry()
    requests_total = Counter(
        "verifiers_requests", "HTTP requests", ["endpoint", "code"], registry=registry
    )
    results_total = Counter(
        "verifiers_results",
        "Results by status and verifier",
        ["status", "verifier"],
        registry=registry,
    )
    histograms = {
        name: Histogram(name, doc, labels, registry=registry, buckets=buckets)
        for name, doc, labels, buckets in _HISTOGRAMS
    }
    request_seconds = histograms["verifiers_request_seconds"]
    item_seconds = histograms["verifiers_item_seconds"]
    resource_histograms = [(histograms[name], key) for name, key in _RESOURCE_OBSERVATIONS]
    errors_total = Counter(
        "verifiers_errors",
        "Unjudged results by error kind and verifier",
        ["kind", "verifier"],
        registry=registry,
    )
    limit_hits = Counter(
        "verifiers_sandbox_limit_hits",
        "Items whose sandbox jobs hit a limit",
        ["verifier", "runtime", "limit"],
        registry=registry,
    )
    recycled_total = Counter(
        "verifiers_sandbox_recycled",
        "Sandbox runners recycled, by runtime and reason (used_up, tainted, broken)",
        ["runtime", "reason"],
        registry=registry,
    )
    recycled_seen: dict[tuple[str, str], int] = {}
    in_flight = Gauge("verifiers_items_in_flight", "Items being scored", registry=registry)
    slots_held = Gauge(
        "verifiers_machine_slots_held",
        "Machine-wide slots held by this server",
        registry=registry,
    )
    slots_total = Gauge(
        "verifiers_machine_slots", "Machine-wide slot budget (0: no limit)", registry=registry
    )
    sandbox_workers = Gauge(
        "verifiers_sandbox_workers",
        "Warm sandbox workers by state (busy, idle, starting)",
        ["state"],
        registry=registry,
    )

    runtime_workers = Gauge(
        "verifiers_sandbox_runtime_workers",
        "Sandbox workers and waiting sessions per runtime (busy, idle, starting, waiting)",
        ["runtime", "state"],
        registry=registry,
    )

    class NanJSONResponse(JSONResponse):
        """JSON that may carry NaN (Python's json reads it; OpenRLHF's client is Python)."""

        def render(self, content: Any) -> bytes:
            return json.dumps(content, allow_nan=True, separators=(",", ":")).encode("utf-8")

    state: dict[str, Any] = {"engine": None, "draining": False, "slots": None}
    scoring = OpenRLHFScoring(
        verifier=cfg.verifier,
        spec=cfg.spec,
        invalid_score=cfg.invalid_score,
        eos_tokens=DEFAULT_EOS_TOKENS,
        components=cfg.components,
        group_size=cfg.group_size,
        group_wait_s=cfg.group_wait_s,
    )
    openrlhf_problem = scoring.problem(SERVER_FLAGS)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        slots: MachineSlots | None = machine_slots_for(
            cfg.machine_concurrency, cfg.engine.concurrency, "server"
        )
        state["engine"] = Engine(cfg.engine, base_dir=cfg.base_dir, machine_slots=slots)
        state["slots"] = slots
        slots_total.set(slots.slots if slots is not None else 0)
        if openrlhf_problem is not None:
            log.warning("/get_reward will answer 400 (only /v1/score works): %s", openrlhf_problem)
        try:
            yield
        finally:
            state["draining"] = True
            if state.get("openenv") is not None:
                await state["openenv"].aclose()
            await state["engine"].aclose()

    app = FastAPI(
        title="verifiers reward server",
        version=_version(),
        description=(
            "Scores RL rollouts with `verifiers`. `/v1/score` speaks the trajectory/result "
            "schema; `/get_reward` speaks OpenRLHF's remote reward protocol. A result the "
            "verifier could not judge has `reward: null` (never 0)."
        ),
        lifespan=lifespan,
    )

    async def run(items: Sequence[Any]) -> list[Result]:
        engine: Engine | None = state["engine"]
        if engine is None or state["draining"]:
            raise HTTPException(status_code=503, detail="server is shutting down")
        if len(items) > cfg.max_items:
            raise HTTPException(
                status_code=413, detail=f"{len(items)} items; the limit is {cfg.max_items}"
            )
        in_flight.inc(len(items))
        try:
            results = await engine.score(items)
        finally:
            in_flight.dec(len(items))
        # One unwritable result (model text with a lone surrogate) must not turn the whole
        # batch into an HTTP 500: every result leaves through Result.json_safe.
        results = [r.json_safe() for r in results]
        for r in results:
            label = metric_label(r.verifier)
            results_total.labels(r.status, label).inc()
            item_seconds.labels(label).observe(r.duration_s)
            if r.error is not None:
                errors_total.labels(r.error.kind, label).inc()
            used = r.details.get("resources") if isinstance(r.details, dict) else None
            if isinstance(used, dict) and not r.cached:
                runtime = "+".join(map(str, used.get("runtimes") or [])) or "none"
                for histogram, key in resource_histograms:
                    histogram.labels(label, runtime).observe(float(used.get(key) or 0))
                for limit in used.get("limit_hit") or []:
                    limit_hits.labels(label, runtime, str(limit)).inc()
        return results

    @app.post("/v1/score", response_model=ScoreResponse, summary="Score trajectories")
    async def score(body: ScoreRequest) -> ScoreResponse:
        """Score a batch of trajectories; one result per trajectory, in input order."""
        return ScoreResponse(results=await run(body.trajectories))

    async def openrlhf(body: OpenRLHFRequest) -> Any:
        if openrlhf_problem is not None:
            # A configuration that could only answer NaN for an unjudged rollout: refuse
            # (OpenRLHF's client retries, then stops the run with an error) rather than void
            # the trainer's iterations.
            log.error("refusing /get_reward: %s", openrlhf_problem)
            raise HTTPException(
                status_code=400, detail=f"server not set up for OpenRLHF: {openrlhf_problem}"
            )
        try:
            items = scoring.items(body, SERVER_FLAGS)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        response = await scoring.score(body, await run(items))
        return NanJSONResponse(response.model_dump())

    for path in ("/get_reward", "/v1/openrlhf"):
        app.add_api_route(
            path,
            openrlhf,
            methods=["POST"],
            response_model=OpenRLHFResponse,
            summary="OpenRLHF remote reward protocol",
            description=(
                "OpenRLHF's `--remote_rm_url` protocol. `labels` are references for the "
                "server's default verifier, or tasks (dict or JSON string). An unjudged "
                "sample gets its prompt group's judged mean (`--group-size`), else the "
                "server's finite `--invalid-score`, and `extra_logs.verifiers_valid = 0`. "
                "A server with neither, or a plain label without `--verifier`, answers 400."
            ),
            include_in_schema=path == "/get_reward",
        )

    nemo_defaults = TaskDefaults(verifier=cfg.verifier, spec=cfg.spec)

    @app.post(
        "/verify",
        summary="NeMo-Gym resources-server verify",
        description=(
            "NeMo-Gym's `BaseVerifyRequest` (`responses_create_params`, `response`, and the "
            "dataset row's fields: `task`, or `verifier`/`spec`/`reference`, or "
            "`expected_answer` for the server's `--verifier`) -> `BaseVerifyResponse`. An "
            "unjudged rollout gets `reward: null` and `mask_sample: true`, never 0."
        ),
    )
    async def nemo_verify(body: dict[str, Any]) -> Any:
        has_task = any(body.get(k) is not None for k in ("task", "verifier"))
        if not has_task and cfg.verifier is None:
            # The task comes from NeMo-Gym's dataset row, never from the model: a row that
            # names none would be unjudged on every step, so refuse it as a setup error.
            raise HTTPException(
                status_code=400,
                detail=(
                    "the /verify body has no 'task' or 'verifier' field and the server has "
                    "no default verifier; start it with --verifier NAME, or add a 'task' "
                    "field to the NeMo-Gym dataset rows"
                ),
            )
        try:
            item = verify_item(body, nemo_defaults)
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None
        (result,) = await run([item])
        # ASCII-escaped JSON: the echoed rollout may hold a lone surrogate from model text
        return NanJSONResponse(verify_reply(body, result))

    @app.get("/healthz", summary="Liveness and readiness")
    async def healthz() -> Any:
        if state["draining"] or state["engine"] is None:
            return JSONResponse({"status": "draining"}, status_code=503)
        return {"status": "ok", "version": _version()}

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    async def metrics() -> Any:
        slots: MachineSlots | None = state["slots"]
        slots_held.set(slots.held if slots is not None else 0)
        by_runtime = sandbox_occupancy_by_runtime(state["engine"])
        totals = {"busy": 0, "idle": 0, "starting": 0}
        for runtime, counts in by_runtime.items():
            for key, value in counts.items():
                runtime_workers.labels(runtime, key).set(value)
                if key in totals:
                    totals[key] += value
        for key in ("busy", "idle", "starting"):
            sandbox_workers.labels(key).set(totals[key])
        # The pool's tally is monotonic: export what grew since the last scrape.
        for labels, count in sandbox_recycled(state["engine"]).items():
            grown = count - recycled_seen.get(labels, 0)
            if grown > 0:
                recycled_total.labels(*labels).inc(grown)
                recycled_seen[labels] = count
        return PlainTextResponse(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    app.add_middleware(RequestMetrics, requests=requests_total, seconds=request_seconds)
    app.state.verifiers = state
    mount_ors(app, cfg.engine)  # the Open Reward Standard routes when VERIFIERS_ORS_TASKS is set
    from .openenv import mount as mount_openenv

    # OpenEnv's reset/step/state under /openenv when VERIFIERS_OPENENV_TASKS is set
    state["openenv"] = mount_openenv(app, engine=cfg.engine)
    return app


def metric_label(verifier: str) -> str:
    """The ``verifier`` label of a result: a registered name, else ``other`` (or ``none``).

    Labels come from what clients send; unbounded label values grow the server's memory and
    every scrape without limit (20k names took a server from 65 to 183 MB). Only names in
    the registry (built-ins and installed plugins) become label values.
    """
    name = verifier.split("@", 1)[0]
    if not name:
        return "none"
    return name if name in _registered_names() else "other"


@functools.cache
def _registered_names() -> frozenset[str]:
    from verifiers.registry import installed_verifiers

    return frozenset(installed_verifiers())


def sandbox_occupancy(engine: Engine | None) -> dict[str, int]:
    """Busy/idle/starting warm sandbox workers of ``engine`` (zeros before first use).

    Best effort: reads the sandbox pool's bookkeeping; a provider without a pool (or of
    another shape) reports zeros rather than failing the scrape.
    """
    out = {"busy": 0, "idle": 0, "starting": 0}
    for counts in sandbox_occupancy_by_runtime(engine).values():
        for key in out:
            out[key] += counts[key]
    return out


def sandbox_occupancy_by_runtime(engine: Engine | None) -> dict[str, dict[str, int]]:
    """Per runtime (the pool key's image): busy, idle, starting and waiting sessions.

    ``waiting`` counts sessions queued for a worker of that runtime (the pool is full). The
    label values are the runtimes the engine started, a set fixed by the image definitions.
    """
    out: dict[str, dict[str, int]] = {}
    slots = getattr(_pool_of(engine), "_slots", None)
    if not isinstance(slots, dict):
        return out
    for key, slot in slots.items():
        runtime = _runtime_of(key)
        counts = out.setdefault(runtime, {"busy": 0, "idle": 0, "starting": 0, "waiting": 0})
        counts["busy"] += len(getattr(slot, "busy", ()))
        counts["idle"] += len(getattr(slot, "idle", ()))
        counts["starting"] += len(getattr(slot, "starting", ())) + int(
            getattr(slot, "launching", 0)
        )
        waiters = getattr(getattr(slot, "semaphore", None), "_waiters", None)
        counts["waiting"] += len(waiters) if waiters else 0
    return out


def _pool_of(engine: Engine | None) -> Any:
    provider = getattr(getattr(engine, "_sandboxes", None), "_provider", None)
    return getattr(provider, "_pool", None)


def _runtime_of(key: Any) -> str:
    """A pool key's runtime (its image): a set fixed by the image definitions."""
    return str(key[0] if isinstance(key, tuple) and key else key)


def sandbox_recycled(engine: Engine | None) -> dict[tuple[str, str], int]:
    """Runners recycled so far by ``(runtime, reason)`` (the pool's ``recycled`` tally).

    Best effort, like :func:`sandbox_occupancy_by_runtime`: no pool yet, no counts.
    """
    out: dict[tuple[str, str], int] = {}
    tally = getattr(_pool_of(engine), "recycled", None)
    if not isinstance(tally, dict):
        return out
    for (key, reason), count in list(tally.items()):
        labels = (_runtime_of(key), str(reason))
        out[labels] = out.get(labels, 0) + int(count)
    return out


_KNOWN_PATHS = frozenset({"/v1/score", "/get_reward", "/v1/openrlhf", "/healthz", "/metrics"})


def _version() -> str:
    from verifiers import __version__

    return __version__


def write_openapi(path: Path, settings: ServerSettings | None = None) -> None:
    """Write the OpenAPI schema (docs/openapi.json)."""
    app = create_app(settings)
    schema = app.openapi()
    path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="verifiers serve", description="Serve rewards over HTTP (/v1/score, /get_reward)."
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--concurrency", type=int, help="items verified at once (engine)")
    # The same flags as `verifiers score` for the same settings (--timeout, --no-cache,
    # --cache-path); --timeout-s and --cache on|off|PATH stay for existing command lines.
    p.add_argument(
        "--timeout", "--timeout-s", dest="timeout_s", type=float, help="per-item deadline, seconds"
    )
    p.add_argument("--retries", type=int, help="retries for infra errors")
    p.add_argument("--sandbox", choices=["auto", "docker", "local", "fake", "none"])
    p.add_argument("--workers", type=int, help="worker processes for CPU-heavy checks")
    p.add_argument("--cache", help="'on', 'off' or a cache file path")
    p.add_argument("--no-cache", dest="cache", action="store_const", const="off", help="no cache")
    p.add_argument("--cache-path", dest="cache", metavar="PATH", help="cache database file")
    p.add_argument("--verifier", help="default verifier for OpenRLHF labels")
    p.add_argument("--spec", help="its spec, as JSON")
    p.add_argument(
        "--invalid-score",
        type=float,
        help="OpenRLHF reward for unjudged samples without a group (finite; default: unset, "
        "so /get_reward needs --group-size)",
    )
    p.add_argument(
        "--components",
        help="comma-separated component names logged in OpenRLHF extra_logs (fixed key set)",
    )
    p.add_argument(
        "--group-size",
        type=int,
        help="OpenRLHF --rollout.n_samples_per_prompt: unjudged rollouts get zero advantage",
    )
    p.add_argument(
        "--group-wait-s",
        type=float,
        default=60.0,
        help="longest wait of an unjudged rollout for its group (default 60)",
    )
    p.add_argument("--max-body-mb", type=float, default=32.0, help="request body limit (MiB)")
    p.add_argument("--max-items", type=int, default=8192, help="items per request limit")
    p.add_argument(
        "--machine-concurrency",
        type=int,
        help="machine-wide limit shared with other processes on this host",
    )
    p.add_argument("--base-dir", help="where relative artifact paths resolve")
    p.add_argument(
        "--graceful-timeout-s",
        type=float,
        default=300.0,
        help="how long shutdown waits for in-flight requests (default 300)",
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--write-openapi", metavar="PATH", help="write the OpenAPI schema and exit")
    return p


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """:class:`ServerSettings` from parsed ``verifiers serve`` arguments."""
    cache: bool | Path | None = None
    if args.cache is not None:
        cache = {"on": True, "off": False}.get(args.cache, Path(args.cache))
    engine = EngineSettings.from_flags(args, cache=cache)
    return ServerSettings(
        engine=engine,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        max_items=args.max_items,
        verifier=args.verifier,
        spec=json.loads(args.spec) if args.spec else None,
        invalid_score=args.invalid_score,
        components=list(parse_components(args.components, "--components")),
        group_size=args.group_size,
        group_wait_s=args.group_wait_s,
        base_dir=args.base_dir,
        machine_concurrency=args.machine_concurrency,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``verifiers serve``: run the server until SIGINT/SIGTERM. Returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"verifiers serve: invalid setting: {exc}", file=sys.stderr)
        return 2
    if args.write_openapi:
        try:
            write_openapi(Path(args.write_openapi), settings)
        except ValueError as exc:
            print(f"verifiers serve: invalid setting: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        import uvicorn
    except ImportError:
        print("verifiers serve needs uvicorn (pip install 'verifiers[serve]')", file=sys.stderr)
        return 1
    try:
        app = create_app(settings)
    except MissingDependency as exc:
        print(f"verifiers serve: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"verifiers serve: invalid setting: {exc}", file=sys.stderr)
        return 2
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=args.graceful_timeout_s,
        lifespan="on",
    )
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
