"""OpenEnv's environment protocol (``reset`` / ``step`` / ``state``), backed by episodes.

OpenEnv (``openenv-core``: ``EnvClient``, ``GenericEnvClient``) talks to an environment server
in two ways, and both are served here, under ``/openenv`` of ``verifiers serve``:

* **WebSocket** ``/openenv/ws`` (what OpenEnv's own client uses): one connection is one
  session; messages ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data":
  <action>}``, ``{"type": "state"}``, ``{"type": "close"}``; answers ``{"type":
  "observation", "data": {"observation", "reward", "done"}}``, ``{"type": "state", "data":
  {...}}`` or ``{"type": "error", "data": {"message", "code"}}``.
* **HTTP** ``POST /openenv/reset``, ``POST /openenv/step``, ``GET /openenv/state``: the same
  bodies. OpenEnv's own HTTP routes are stateless (a fresh environment per request), which a
  live sandbox cannot be, so ``reset`` answers a ``session_id`` (in the observation) and
  ``step``/``state`` name it (``{"action": ..., "session_id": ...}``, ``?session_id=``).
  ``GET /openenv/health``, ``/openenv/metadata`` and ``/openenv/schema`` answer as OpenEnv's do.

``reset`` data: ``task_id`` (a row of the served JSONL), or ``task`` (a whole row inline), or
``seed`` (row ``seed % rows``); nothing picks the first row. An action is ``{"tool": name,
"arguments": {...}}`` over the tools of :mod:`verifiers.rl_adapters._tools` (the same names,
schemas, validation and texts as every other trainer's API). The observation is ``{"text",
"tool", "status", "attempt", "session_id"}``. ``reward`` is the attempt's reward on a
``submit`` and the episode's final reward on the step that ends it; an episode that could not
be judged (its sandbox died) ends with ``reward: null``, ``done: true`` and ``status:
"error"``: an abstain, never 0. Bad requests (an unknown key, a missing session) are errors
that name the field; a model's bad tool call is the observation's text, not an error.

Serve it: ``VERIFIERS_OPENENV_TASKS=tasks.jsonl verifiers serve`` (or mount
:func:`build_router` into any FastAPI app). Needs only the ``serve`` extra (WebSocket support
in uvicorn needs ``websockets``).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifiers.engine import Engine, EngineSettings, validation_message
from verifiers.episode import Episode
from verifiers.errors import BadInput, MissingDependency
from verifiers.settings import env

from . import _tools

try:  # module level: FastAPI resolves the handlers' annotations from these globals
    from fastapi import APIRouter, HTTPException, WebSocket, WebSocketDisconnect
    from fastapi.responses import JSONResponse
except ImportError:  # pragma: no cover - only without the extra
    raise MissingDependency("fastapi", "serve") from None

__all__ = ["OpenEnvSessions", "build_router", "mount"]

PREFIX = "/openenv"
MAX_SESSIONS = 256
"""Live HTTP sessions at once; the one idle longest is finished to make room."""


class Action(BaseModel):
    """One step: a tool call on the episode."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="One of run_command, write_file, read_file, list_files, submit.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")


class ResetData(BaseModel):
    """What ``reset`` may name (OpenEnv's ``seed`` and ``episode_id``, plus the task)."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)
    task_id: str | None = None
    task: dict[str, Any] | None = None
    session_id: str | None = None
    """HTTP only: reset this session instead of opening a new one."""


class StepBody(BaseModel):
    """HTTP ``POST /step``: OpenEnv's step request plus the session."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    session_id: str
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = None


class _Session:
    def __init__(self, episode: Episode, episode_id: str) -> None:
        self.episode = episode
        self.episode_id = episode_id
        self.steps = 0
        self.last = time.monotonic()
        self.status: str = "running"
        self.reward: float | None = None
        self.result: dict[str, Any] | None = None


def _bad(exc: ValidationError, what: str) -> BadInput:
    return BadInput(f"{what}: {validation_message(exc)}")


class OpenEnvSessions:
    """Episodes by session id over one engine (one per event loop of the server)."""

    def __init__(self, rows: list[dict[str, Any]], engine: EngineSettings | None = None) -> None:
        self.rows = rows
        self.by_id = {str(r.get("id")): r for r in rows if r.get("id") is not None}
        self.settings = engine
        self.engines: dict[int, Engine] = {}
        self.sessions: dict[str, _Session] = {}

    def _row(self, data: ResetData) -> dict[str, Any]:
        if data.task is not None:
            return data.task
        if data.task_id is not None:
            row = self.by_id.get(data.task_id)
            if row is None:
                known = ", ".join(sorted(self.by_id)[:20]) or "(none)"
                raise BadInput(f"reset: no task {data.task_id!r}; the served tasks: {known}")
            return row
        if not self.rows:
            raise BadInput("reset: this server serves no tasks; pass 'task' (a task row)")
        return self.rows[(data.seed or 0) % len(self.rows)]

    async def reset(self, raw: dict[str, Any], session_id: str | None = None) -> dict[str, Any]:
        """Open (or re-open) a session's episode; its first observation."""
        try:
            data = ResetData.model_validate(raw)
        except ValidationError as exc:
            raise _bad(exc, "reset") from None
        row = self._row(data)
        item = _tools.row_item(row, where="the task row")
        sid = session_id or data.session_id or uuid.uuid4().hex
        await self.close(sid)
        await self._make_room()
        episode = _tools.engine_for_loop(self.engines, self.settings).episode(item)
        await episode.start()
        session = _Session(episode, data.episode_id or sid)
        self.sessions[sid] = session
        text = f"{row.get('prompt') or ''}\n\n{await _tools.opening(episode)}".lstrip()
        return self._observation(sid, session, text=text, tool=None, reward=None, done=False)

    async def step(self, session_id: str, raw: Any) -> dict[str, Any]:
        """One tool call; the episode's final reward on the step that ends it."""
        session = self._session(session_id)
        try:
            action = Action.model_validate(raw)
        except ValidationError as exc:
            raise _bad(exc, "step action") from None
        episode = session.episode
        session.steps += 1
        session.last = time.monotonic()
        if session.result is not None:
            return self._observation(
                session_id,
                session,
                text="The episode is over; reset to start another.",
                tool=action.tool,
                reward=session.reward,
                done=True,
            )
        reply = await _tools.call_tool(episode, action.tool, action.arguments)
        reward = reply.step.reward if reply.step is not None else None
        if reply.step is not None:
            session.status = reply.step.status
        done = episode.done
        if done:
            result = await episode.finish()
            reward = None if result.status in ("error", "skipped") else result.reward
            session.status, session.reward = result.status, reward
            session.result = result.json_safe().model_dump(mode="json")
        return self._observation(
            session_id, session, text=reply.text, tool=action.tool, reward=reward, done=done
        )

    def state(self, session_id: str) -> dict[str, Any]:
        """OpenEnv's ``State``: ``episode_id`` and ``step_count``, plus the episode's counters
        and, once it ended, its final result."""
        session = self._session(session_id)
        episode = session.episode
        return {
            "episode_id": session.episode_id,
            "step_count": session.steps,
            "session_id": session_id,
            "done": session.result is not None or episode.done,
            "status": session.status,
            "turns": episode.turns,
            "commands": episode.commands,
            "result": session.result,
        }

    async def close(self, session_id: str) -> None:
        """Finish and forget a session (idempotent)."""
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.episode.finish()

    async def aclose(self) -> None:
        for sid in list(self.sessions):
            await self.close(sid)
        for engine in self.engines.values():
            await engine.aclose()
        self.engines.clear()

    async def _make_room(self) -> None:
        while len(self.sessions) >= MAX_SESSIONS:
            oldest = min(self.sessions, key=lambda sid: self.sessions[sid].last)
            await self.close(oldest)

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise BadInput(f"no session {session_id!r}: call reset first (it answers a session_id)")
        return session

    @staticmethod
    def _observation(
        sid: str,
        session: _Session,
        *,
        text: str,
        tool: str | None,
        reward: float | None,
        done: bool,
    ) -> dict[str, Any]:
        return {
            "observation": {
                "text": text,
                "tool": tool,
                "status": session.status,
                "attempt": len(session.episode.attempts),
                "session_id": sid,
            },
            "reward": reward,
            "done": done,
        }


def _error(message: str, code: Literal["INVALID_JSON", "VALIDATION_ERROR", "UNKNOWN_TYPE"]) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def build_router(sessions: OpenEnvSessions) -> Any:
    """The FastAPI router of the OpenEnv routes over ``sessions`` (mount it at a prefix)."""
    router = APIRouter()

    def refused(exc: BadInput) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=422)

    @router.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @router.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return {
            "name": "verifiers-workspace",
            "description": "One verifiers episode per session: tools over a live sandbox.",
            "tasks": len(sessions.rows),
        }

    @router.get("/schema")
    async def schema() -> dict[str, Any]:
        return {
            "action": Action.model_json_schema(),
            "tools": [_tools.openai_schema(spec.name) for spec in _tools.TOOLS],
            "reset": ResetData.model_json_schema(),
        }

    @router.post("/reset")
    async def reset(body: dict[str, Any] | None = None) -> Any:
        try:
            return await sessions.reset(body or {})
        except BadInput as exc:
            return refused(exc)

    @router.post("/step")
    async def step(body: dict[str, Any]) -> Any:
        try:
            parsed = StepBody.model_validate(body)
        except ValidationError as exc:
            return refused(_bad(exc, "step"))
        try:
            return await sessions.step(parsed.session_id, parsed.action.model_dump())
        except BadInput as exc:
            return refused(exc)

    @router.get("/state")
    async def state(session_id: str = "") -> Any:
        if not session_id:
            raise HTTPException(422, "state needs ?session_id= (reset answers one)")
        try:
            return sessions.state(session_id)
        except BadInput as exc:
            return refused(exc)

    @router.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        sid = uuid.uuid4().hex
        try:
            while True:
                raw = await socket.receive_text()
                try:
                    message = json.loads(raw)
                except ValueError as exc:
                    await socket.send_text(_error(f"Invalid JSON: {exc}", "INVALID_JSON"))
                    continue
                kind = message.get("type") if isinstance(message, dict) else None
                try:
                    if kind == "reset":
                        out = {
                            "type": "observation",
                            "data": await sessions.reset(message.get("data") or {}, sid),
                        }
                    elif kind == "step":
                        if sid not in sessions.sessions:
                            await sessions.reset({}, sid)
                        out = {
                            "type": "observation",
                            "data": await sessions.step(sid, message.get("data")),
                        }
                    elif kind == "state":
                        out = {"type": "state", "data": sessions.state(sid)}
                    elif kind == "close":
                        break
                    else:
                        await socket.send_text(
                            _error(f"Unknown message type: {kind!r}", "UNKNOWN_TYPE")
                        )
                        continue
                except BadInput as exc:
                    await socket.send_text(_error(exc.message, "VALIDATION_ERROR"))
                    continue
                await socket.send_text(json.dumps(out))
        except WebSocketDisconnect:
            pass
        finally:
            await sessions.close(sid)

    return router


def load_rows(path: str) -> list[dict[str, Any]]:
    """Task rows of a JSONL file (one object per non-empty line).

    Raises:
        BadInput: a line that is not a JSON object (its number is named).
    """
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise BadInput(f"{path}:{number}: a task row is a JSON object")
        rows.append(row)
    return rows


def mount(
    app: Any, rows: list[dict[str, Any]] | None = None, engine: EngineSettings | None = None
) -> OpenEnvSessions | None:
    """Mount the OpenEnv routes at ``/openenv`` of ``app`` over ``rows`` (default: the JSONL
    that ``VERIFIERS_OPENENV_TASKS`` names; nothing when it is unset and no rows are given).
    The caller closes the sessions (:meth:`OpenEnvSessions.aclose`) when the app stops:
    ``verifiers serve`` does so in its lifespan."""
    if rows is None:
        path = env("VERIFIERS_OPENENV_TASKS")
        if not path:
            return None
        rows = load_rows(path)
    sessions = OpenEnvSessions(rows, engine)
    app.include_router(build_router(sessions), prefix=PREFIX)
    return sessions
