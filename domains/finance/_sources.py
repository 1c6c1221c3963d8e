"""Loading ``task.spec.document`` into a :class:`Document`: inline, CSV, HTML or PDF.

PDF extraction is the only slow path. It runs in a worker process (``ctx.run_in_worker``) and
its JSON output is cached by the file's SHA-256: in memory (LRU) for the life of the process,
and on disk under ``$VERIFIERS_CACHE_DIR/finance-pdf/`` (default ``~/.cache/verifiers``) so a
second run over the same reports skips pdfplumber entirely. ``VERIFIERS_FINANCE_PDF_CACHE=0``
turns the disk cache off.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.errors import BadInput, MissingDependency

from ._document import Document, Table, detect_scale
from ._pdf import EXTRACTOR_VERSION

if TYPE_CHECKING:
    from verifiers.context import VerifierContext
    from verifiers.types import Trajectory

__all__ = [
    "PdfTableCache",
    "clear_inline_caches",
    "document_from_extraction",
    "load_document",
    "load_inline",
    "pdf_cache",
]

_MAX_INLINE_BYTES = 8 * 1024 * 1024
_HASH_IN_THREAD_BYTES = 1024 * 1024
_SCALES = ("", "thousand", "million", "billion")


class _DocumentLRU:
    """Parsed inline documents by their JSON text: a report's tables are parsed once for
    all the questions and completions (GRPO groups) that cite them."""

    def __init__(self, max_items: int = 256) -> None:
        self.max_items = max_items
        self._items: OrderedDict[str, Document] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Document | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: str, document: Document) -> None:
        with self._lock:
            self._items[key] = document
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class PdfTableCache:
    """Extraction results by content hash: an in-memory LRU in front of a JSON directory.

    Thread-safe; the disk layer writes atomically (temp file + rename), so concurrent
    processes sharing the directory never read half a file.
    """

    def __init__(self, directory: Path | None, max_items: int = 128) -> None:
        self.directory = directory
        self.max_items = max_items
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.documents = _DocumentLRU(64)
        """Documents built from cached extractions (keyed by extraction key and options)."""

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        if self.directory is None:
            return None
        path = self.directory / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        self._remember(key, data)
        return data

    def put(self, key: str, data: dict[str, Any]) -> None:
        self._remember(key, data)
        if self.directory is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError:
            pass  # a read-only or full cache dir only costs speed

    def clear_memory(self) -> None:
        """Forget the in-memory layer (the disk layer stays)."""
        with self._lock:
            self._items.clear()
        self.documents.clear()

    def _remember(self, key: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = data
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)


def _default_cache_dir() -> Path | None:
    if os.environ.get("VERIFIERS_FINANCE_PDF_CACHE", "1").lower() in ("0", "false", "no", "off"):
        return None
    root = os.environ.get("VERIFIERS_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "verifiers"
    return base / "finance-pdf"


pdf_cache = PdfTableCache(_default_cache_dir())
"""The process-wide PDF extraction cache."""


def document_from_extraction(data: dict[str, Any], declared_scale: str = "") -> Document:
    """Build a :class:`Document` from :func:`~._pdf.extract_tables` output."""
    tables = [
        Table(
            rows=t["rows"],
            page=t.get("page"),
            index=int(t.get("index", i)),
            scale=str(t.get("scale") or ""),
            strategy=str(t.get("strategy", "lines")),
        )
        for i, t in enumerate(data.get("tables", []))
    ]
    text = [str(t) for t in data.get("text", [])]
    return Document(tables, text, declared_scale or str(data.get("scale") or ""), "pdf")


async def load_document(
    document: dict[str, Any],
    trajectory: Trajectory,
    ctx: VerifierContext,
    *,
    pdf_timeout: float,
    pdf_memory_mb: int,
    max_pages: int,
) -> tuple[Document, dict[str, Any]]:
    """Turn ``task.spec.document`` into a Document.

    Returns:
        The document and details for the result (``source``, ``sha256``, ``cached``).

    Raises:
        BadInput: no usable source, a missing or unreadable file, a broken PDF.
    """
    if not isinstance(document, dict) or not document:
        raise BadInput(
            'task.spec.document is required: {"pdf": ...}, {"table": ...}, {"csv": ...} or {"html": ...}'
        )
    declared = document.get("scale") or ""
    if declared not in _SCALES:
        raise BadInput(f"document scale {declared!r} must be one of {_SCALES}")
    text = _text_of(document)
    if "pdf" in document:
        path = _source_path(document["pdf"], trajectory, ctx, "pdf")
        if path.stat().st_size > _HASH_IN_THREAD_BYTES:
            digest = await asyncio.to_thread(_sha256, path)  # keep the event loop responsive
        else:
            digest = _sha256(path)
        key = f"{digest}-v{EXTRACTOR_VERSION}-p{max_pages}"
        extraction = pdf_cache.get(key)
        cached = extraction is not None
        if extraction is None:
            extraction = await ctx.run_in_worker(
                "verifiers.domains.finance._pdf:extract_tables",
                {"path": str(path), "max_pages": max_pages},
                timeout=min(pdf_timeout, ctx.remaining()),
                memory_mb=pdf_memory_mb,
            )
            if not isinstance(extraction, dict):
                raise BadInput(f"PDF {document['pdf']!r}: extraction returned no tables")
            pdf_cache.put(key, extraction)
        doc_key = f"{key}|{declared}|{json.dumps(text)}"
        doc = pdf_cache.documents.get(doc_key) if cached else None
        if doc is None:
            doc = document_from_extraction(extraction, declared)
            doc.text = doc.text + list(text)
            pdf_cache.documents.put(doc_key, doc)
        return doc, {
            "source": "pdf",
            "sha256": digest,
            "pdf_cached": cached,
            "tables": len(doc.tables),
        }
    if "table" in document or "tables" in document:
        parsed = _inline_cached(document, declared, text)
        return parsed, {"source": "inline", "tables": len(parsed.tables)}
    tables: list[Table] = []
    if "csv" in document or "html" in document:
        source = "csv" if "csv" in document else "html"
        marker = "\n" if source == "csv" else "<"
        content = _inline_or_file(document[source], trajectory, ctx, source, marker)
        content_key = (
            f"{source}:{hashlib.sha256(content.encode()).hexdigest()}:{declared}:{json.dumps(text)}"
        )
        found = _inline_documents.get(content_key)
        if found is None:
            if source == "csv":
                tables.append(
                    Table(rows=_read_csv(content), index=0, scale=declared, strategy="csv")
                )
            else:
                for i, rows in enumerate(_read_html(content)):
                    tables.append(Table(rows=rows, index=i, scale=declared, strategy="html"))
            scale = declared or detect_scale("\n".join(text))
            found = Document(tables, list(text), scale, source)
            _inline_documents.put(content_key, found)
        return found, {"source": source, "tables": len(found.tables)}
    if text:
        source = "text"
    else:
        raise BadInput(
            f"document has none of pdf, table, tables, csv, html, text (keys: {sorted(document)})"
        )
    scale = declared or detect_scale("\n".join(text))
    return Document(tables, list(text), scale, source), {"source": source, "tables": len(tables)}


_inline_documents = _DocumentLRU()

# Documents by the identity of the spec's document dict. The engine validates each distinct
# ``task.spec`` once and hands the same (frozen) spec object to every item that repeats it (a
# report's questions, a GRPO group), so identity finds a parsed document without serialising
# the whole table to build a content key. The dict is held, so its id cannot be reused.
_by_identity: OrderedDict[int, tuple[dict[str, Any], Document]] = OrderedDict()
_BY_IDENTITY_MAX = 256
_identity_lock = threading.Lock()

_MAX_INLINE_CELLS = 20_000
"""Inline documents larger than this many table cells are not judged on the engine's inline
path (their first parse could take more than a few milliseconds): they go the async way."""
_MAX_INLINE_TEXT = 200_000
"""Same bound for inline text, in characters."""


def load_inline(document: Any) -> tuple[Document, dict[str, Any]] | None:
    """Load an inline table/text document synchronously, or None when it is not one.

    The engine's inline fast path (``Verifier.verify_inline``) uses this: it returns None for
    PDF, CSV and HTML sources (file reads, pandas, a worker process) and for inline documents
    above :data:`_MAX_INLINE_CELLS` cells or :data:`_MAX_INLINE_TEXT` characters of text not
    parsed yet, which then take :func:`load_document`'s async path with identical verdicts.

    Raises:
        BadInput: the same malformed-document errors :func:`load_document` raises.
    """
    if not isinstance(document, dict) or not document:
        return None
    key = id(document)
    hit = _by_identity.get(key)
    if hit is not None and hit[0] is document:
        found = hit[1]
        return found, {"source": found.source, "tables": len(found.tables)}
    if "pdf" in document or "csv" in document or "html" in document:
        return None
    inline = "table" in document or "tables" in document
    if not inline and not document.get("text"):
        return None  # load_document reports the missing source
    if not _small(document):
        return None
    declared = document.get("scale") or ""
    if declared not in _SCALES:
        raise BadInput(f"document scale {declared!r} must be one of {_SCALES}")
    text = _text_of(document)
    if inline:
        found = _inline_cached(document, declared, text)
    else:
        found = Document([], list(text), declared or detect_scale("\n".join(text)), "text")
    with _identity_lock:
        _by_identity[key] = (document, found)
        while len(_by_identity) > _BY_IDENTITY_MAX:
            _by_identity.popitem(last=False)  # oldest first: specs arrive grouped
    return found, {"source": found.source, "tables": len(found.tables)}


def clear_inline_caches() -> None:
    """Forget parsed inline documents (benchmarks measure first parses with this)."""
    _inline_documents.clear()
    with _identity_lock:
        _by_identity.clear()


def _small(document: dict[str, Any]) -> bool:
    raw_tables = [document["table"]] if "table" in document else document.get("tables", [])
    cells = 0
    if isinstance(raw_tables, list):
        for rows in raw_tables:
            if isinstance(rows, list):
                for row in rows:
                    cells += len(row) if isinstance(row, list) else 1
                    if cells > _MAX_INLINE_CELLS:
                        return False
    text = document.get("text")
    if isinstance(text, str):
        return len(text) <= _MAX_INLINE_TEXT
    if isinstance(text, list):
        return sum(len(p) for p in text if isinstance(p, str)) <= _MAX_INLINE_TEXT
    return True


def _text_of(document: dict[str, Any]) -> list[str]:
    text = document.get("text") or []
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(p, str) for p in text):
        raise BadInput("document.text must be a string or a list of strings")
    return text


def _inline_cached(document: dict[str, Any], declared: str, text: list[str]) -> Document:
    inline_key = _inline_key(document)
    found = _inline_documents.get(inline_key) if inline_key is not None else None
    if found is None:
        found = _inline_document(document, declared, text)
        if inline_key is not None:
            _inline_documents.put(inline_key, found)
    return found


def _inline_key(document: dict[str, Any]) -> str | None:
    try:
        key = json.dumps(document, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None
    return key if len(key) <= _MAX_INLINE_BYTES else None


def _inline_document(document: dict[str, Any], declared: str, text: list[str]) -> Document:
    raw_tables = [document["table"]] if "table" in document else document["tables"]
    if not isinstance(raw_tables, list):
        raise BadInput("document.tables must be a list of tables (lists of rows)")
    tables: list[Table] = []
    for i, rows in enumerate(raw_tables):
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise BadInput(f"document table {i} must be a list of rows (lists of cells)")
        tables.append(Table(rows=rows, index=i, scale=declared))
    scale = declared or detect_scale("\n".join(text))
    return Document(tables, list(text), scale, "inline")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _source_path(value: Any, trajectory: Trajectory, ctx: VerifierContext, kind: str) -> Path:
    """The task's document file, relative to the input file.

    Never a trajectory artifact: artifacts are what the model produced, and a model that may
    name an artifact like the task's document replaces the report its answer is checked
    against with one it wrote (any figure it likes is then "printed" there).
    """
    if not isinstance(value, str) or not value:
        raise BadInput(f"document.{kind} must be a file path relative to the input file")
    try:
        return ctx.resolve_path(value)
    except BadInput as exc:
        if value in trajectory.artifacts:
            raise BadInput(
                f"{exc}; task documents are read from the task, never from the trajectory's "
                f"artifacts (artifact {value!r} is ignored)"
            ) from None
        raise


def _inline_or_file(
    value: Any, trajectory: Trajectory, ctx: VerifierContext, kind: str, marker: str
) -> str:
    if isinstance(value, str) and marker in value:
        text = value
    else:
        path = _source_path(value, trajectory, ctx, kind)
        if path.stat().st_size > _MAX_INLINE_BYTES:
            raise BadInput(f"{kind} file {value!r} is larger than {_MAX_INLINE_BYTES} bytes")
        text = path.read_text(encoding="utf-8", errors="replace")
    if len(text) > _MAX_INLINE_BYTES:
        raise BadInput(f"{kind} document is larger than {_MAX_INLINE_BYTES} bytes")
    return text


def _read_csv(text: str) -> list[list[str]]:
    """Rows of CSV text, every cell kept as printed."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependency("pandas", "finance") from None
    try:
        frame = pd.read_csv(io.StringIO(text), header=None, dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise BadInput(f"CSV document cannot be parsed: {exc}") from None
    return [[str(c) for c in row] for row in frame.itertuples(index=False, name=None)]


def _read_html(text: str) -> list[list[list[str]]]:
    """Rows of every ``<table>``, header rows included, every cell kept as printed.

    ``pandas.read_html`` finds the tables; cells are re-read as strings because pandas would
    turn ``4.00`` into ``4.0`` and lose the printed precision grounding relies on.
    """
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependency("pandas", "finance") from None
    try:
        frames = pd.read_html(
            io.StringIO(text),
            header=None,
            thousands=None,  # type: ignore[arg-type]  # None keeps "1,234" as printed
            keep_default_na=False,
            converters=_AllStr(),
        )
    except ImportError as exc:
        raise MissingDependency(str(exc.name or "lxml"), "finance") from None
    except ValueError as exc:
        raise BadInput(f"HTML document has no readable table: {exc}") from None
    out: list[list[list[str]]] = []
    for frame in frames:
        header: list[list[str]] = []
        if not isinstance(frame.columns, pd.RangeIndex):
            levels = frame.columns.nlevels
            labels = [c if isinstance(c, tuple) else (c,) for c in frame.columns]
            header = [[_html_header(label[level]) for label in labels] for level in range(levels)]
        rows = [[_html_cell(c) for c in row] for row in frame.itertuples(index=False, name=None)]
        out.append(header + rows)
    return out


class _AllStr(dict[Any, Any]):
    """``converters`` mapping that keeps every column as text (pandas asks per column)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: Any) -> Any:
        return str

    def get(self, key: Any, default: Any = None) -> Any:
        return str


def _html_header(label: Any) -> str:
    text = _html_cell(label)
    return "" if text.startswith("Unnamed:") else text


def _html_cell(cell: Any) -> str:
    if cell is None or (isinstance(cell, float) and cell != cell):
        return ""
    return str(cell)
