"""Content-addressed result cache in SQLite.

GRPO-style training scores groups of completions that often repeat, and offline re-scoring
re-runs whole files; verdicts that took a sandbox round trip are worth keeping. The key is a
SHA-256 over everything a verdict depends on: verifier name and version, the validated spec,
the completion, the reference, the content of every artifact, and the prompt when the
verifier declares ``uses_prompt``. Metadata is *not* part of the key: a verifier whose verdict
depends on ``trajectory.metadata`` must set ``cacheable = False``.

Only verdicts (``pass``/``fail``/``skipped``) are stored, never ``error`` results: an infra
fault must be retried next time, not replayed.

Several processes may share one file (``verifiers serve`` workers, parallel ``score`` runs):
the database runs in WAL mode with a busy timeout, and writes are batched into one
transaction per ``batch`` puts or ``flush_s`` seconds so throughput does not collapse into one
fsync per result. A cache that breaks (disk full, corrupt file) degrades to misses with a
logged warning; it never fails a scoring run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .errors import InfraError
from .protocol import Spec, Verifier
from .settings import cache_dir
from .types import Result, Trajectory

__all__ = ["ResultCache", "default_cache_path"]

log = logging.getLogger("verifiers.cache")

KEY_SCHEMA = "verifiers-cache-v1"
"""Bumped when the key recipe changes, which invalidates every old entry."""

_HASH_CHUNK = 1024 * 1024


def default_cache_path() -> Path:
    """``$VERIFIERS_CACHE_DIR/results.sqlite``, else ``~/.cache/verifiers/results.sqlite``."""
    return cache_dir() / "results.sqlite"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _artifact_digest(trajectory: Trajectory, name: str, base_dir: Path) -> str:
    """A content hash of one artifact; a stable marker when it cannot be read.

    Unreadable artifacts make the verifier raise ``BadInput``, so their results (errors) are
    never stored; the marker only has to be deterministic.
    """
    artifact = trajectory.artifacts[name]
    if artifact.base64 is not None:
        return "b64:" + hashlib.sha256(artifact.base64.encode()).hexdigest()
    relative = artifact.path or ""
    base = base_dir.resolve()
    path = (base / relative).resolve()
    if base != path and base not in path.parents:
        return f"escapes:{relative}"
    try:
        return "file:" + _file_digest(path)
    except OSError:
        return f"missing:{relative}"


class ResultCache:
    """A SQLite-backed map from content keys to results.

    Args:
        path: The database file; its directory is created.
        batch: Puts buffered before a commit.
        flush_s: Longest time a put stays uncommitted (checked on each put).
        busy_timeout_ms: How long a writer waits for another process's lock.

    Raises:
        InfraError: the database cannot be opened or created (hint: ``--no-cache``).
    """

    def __init__(
        self,
        path: Path,
        *,
        batch: int = 256,
        flush_s: float = 1.0,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self.path = Path(path)
        self._batch = batch
        self._flush_s = flush_s
        self._pending: dict[str, str] = {}
        self._last_commit = time.monotonic()
        self._lock = threading.Lock()
        self._broken = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS results ("
                " key TEXT PRIMARY KEY, result TEXT NOT NULL, created REAL NOT NULL)"
            )
        except (sqlite3.Error, OSError) as exc:
            raise InfraError(
                f"cannot open result cache {str(self.path)!r}: {exc}",
                hint="run with --no-cache, set VERIFIERS_CACHE_DIR, or delete the file",
            ) from None

    # -- keys ----------------------------------------------------------------------------

    def key_for(
        self,
        verifier_cls: type[Verifier[Any]],
        spec: Spec,
        trajectory: Trajectory,
        base_dir: Path,
    ) -> str:
        """The content key of verifying ``trajectory`` with ``verifier_cls`` and ``spec``."""
        digest = hashlib.sha256()

        def part(label: str, text: str) -> None:
            data = text.encode("utf-8", "surrogatepass")
            digest.update(f"{label}:{len(data)}:".encode())
            digest.update(data)

        part("schema", KEY_SCHEMA)
        part("verifier", verifier_cls.name)
        part("version", str(verifier_cls.version))
        part("spec", _canonical(spec.model_dump(mode="json")))
        part("completion", _canonical(_plain(trajectory.completion)))
        part("reference", _canonical(trajectory.task.reference))
        for name in sorted(trajectory.artifacts):
            part("artifact", name)
            part("content", _artifact_digest(trajectory, name, base_dir))
        if verifier_cls.uses_prompt:
            part("prompt", _canonical(_plain(trajectory.prompt)))
        return digest.hexdigest()

    # -- get / put -----------------------------------------------------------------------

    def get(self, key: str) -> Result | None:
        """The stored verdict for ``key`` as it was put (no ``id``, ``cached=False``), or ``None``.

        The cache only stores and returns: marking a hit ``cached`` is the engine's stamp
        (``Engine._stamp``), with everything else it knows about the item.
        """
        with self._lock:
            text = self._pending.get(key)
            if text is None and not self._broken:
                try:
                    row = self._db.execute(
                        "SELECT result FROM results WHERE key = ?", (key,)
                    ).fetchone()
                except sqlite3.Error as exc:
                    self._degrade(exc)
                    row = None
                text = None if row is None else str(row[0])
        if text is None:
            return None
        try:
            return Result.model_validate_json(text)
        except ValueError:
            return None

    def put(self, key: str, result: Result) -> None:
        """Store a verdict. ``error`` results are ignored (they must be retried)."""
        if result.status == "error" or self._broken:
            return
        stored = result.json_safe().model_copy(update={"id": None, "cached": False})
        text = stored.model_dump_json()
        with self._lock:
            self._pending[key] = text
            if (
                len(self._pending) >= self._batch
                or time.monotonic() - self._last_commit >= self._flush_s
            ):
                self._commit()

    def flush(self) -> None:
        """Commit buffered puts now."""
        with self._lock:
            self._commit()

    def close(self) -> None:
        """Commit buffered puts and close the database."""
        with self._lock:
            self._commit()
            try:
                self._db.close()
            except sqlite3.Error:
                pass

    def __len__(self) -> int:
        with self._lock:
            self._commit()
            row = self._db.execute("SELECT COUNT(*) FROM results").fetchone()
            return int(row[0])

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        if not self._pending or self._broken:
            self._pending.clear()
            return
        now = time.time()
        rows = [(key, text, now) for key, text in self._pending.items()]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO results (key, result, created) VALUES (?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            self._degrade(exc)
        self._pending.clear()

    def _degrade(self, exc: sqlite3.Error) -> None:
        if not self._broken:
            log.warning("result cache %s disabled after error: %s", self.path, exc)
        self._broken = True


def _plain(value: Any) -> Any:
    """Messages as plain JSON data, so str and chat completions hash unambiguously."""
    if isinstance(value, list):
        return [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in value]
    return value
