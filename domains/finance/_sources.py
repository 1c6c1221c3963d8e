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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.errors import BadInput, MissingDependency, VerifierError, VerifierTimeout
from verifiers.settings import cache_dir, env_flag

from ._document import Document, Table, detect_scale
from ._numbers import Number
from ._pdf import EXTRACTOR_VERSION, no_text_error
from ._pdfindex import PageIndex, page_index

if TYPE_CHECKING:
    from verifiers.context import VerifierContext
    from verifiers.types import Trajectory

__all__ = [
    "PdfNeeds",
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
_PARSE_PROCESSES = min(4, os.cpu_count() or 1)
"""Worker processes one document's pages are spread over when many are needed."""
_PAGES_PER_PROCESS = 8
"""Pages a process parses before the next process is worth starting."""
_MAX_SEARCHED_FIGURES = 64
"""Distinct uncited figures looked up in the page index; an answer with more reads every page."""


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

    def merge(self, key: str, update: dict[str, Any]) -> None:
        """Add parsed pages (``{"pages", "read": {page: ...}}``) or an ``index`` to an entry.

        The disk copy is re-read before writing, so processes sharing the directory add to
        each other's pages (a lost race only costs a page parsed twice).
        """
        current = self.get(key) or {}
        if self.directory is not None:
            try:
                on_disk = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                on_disk = None
            if isinstance(on_disk, dict) and isinstance(on_disk.get("read"), dict):
                current = {
                    **on_disk,
                    **current,
                    "read": {**on_disk["read"], **current.get("read", {})},
                }
        merged = {**current, **{k: v for k, v in update.items() if k != "read"}}
        merged["read"] = {**current.get("read", {}), **update.get("read", {})}
        self.put(key, merged)

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
    if not env_flag("VERIFIERS_FINANCE_PDF_CACHE", True):
        return None
    return cache_dir() / "finance-pdf"


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


@dataclass(frozen=True)
class PdfNeeds:
    """What one answer needs from a PDF: the figures it quotes, and where it cites them.

    Attributes:
        figures: ``(quoted figure, citation or None)`` per operand the computation uses and
            per literal in it (literals are uncited).
        full: Every page is needed: a citation names a table by its document-wide index, or
            a FinQA program reads rows by label (``table_*``), which any page may hold.
    """

    figures: tuple[tuple[Number, dict[str, Any] | None], ...] = ()
    full: bool = False


_FULL = PdfNeeds(full=True)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _chunks(pages: list[int], parts: int) -> list[list[int]]:
    parts = max(1, min(parts, len(pages)))
    return [pages[i::parts] for i in range(parts)]


class _LazyPdf:
    """Parses the pages of one PDF that a question needs (see :func:`load_pdf`)."""

    def __init__(
        self,
        path: Path,
        key: str,
        ctx: VerifierContext,
        *,
        timeout: float,
        memory_mb: int,
        max_pages: int,
    ) -> None:
        self.path, self.key, self.ctx = path, key, ctx
        self.timeout, self.memory_mb, self.max_pages = timeout, memory_mb, max_pages
        entry = pdf_cache.get(key) or {}
        read = entry.get("read")
        self.read: dict[str, dict[str, Any]] = dict(read) if isinstance(read, dict) else {}
        count = entry.get("pages")
        self.count: int | None = count if _int(count) else None
        self.index_data: Any = entry.get("index")
        self.cached = True
        self.needed: set[int] = set()
        """Pages this answer needs: the document holds these only, whatever else is cached
        (so its tables, and every verdict, never depend on what earlier questions parsed)."""

    def _check_count(self) -> int:
        assert self.count is not None
        if self.count > self.max_pages:
            raise BadInput(
                f"PDF {str(self.path)!r} has {self.count} pages; the limit is {self.max_pages}"
            )
        return self.count

    async def parse(self, pages: Iterable[int]) -> None:
        """Parse the pages not read yet, in parallel worker processes when there are many."""
        wanted = {p for p in pages if self.count is None or 1 <= p <= self._check_count()}
        self.needed |= wanted
        todo = sorted(p for p in wanted if str(p) not in self.read)
        if not todo and self.count is not None:
            return
        self.cached = False
        workers = max(1, min(_PARSE_PROCESSES, len(todo) // _PAGES_PER_PROCESS + 1))
        results = await asyncio.gather(
            *(
                self.ctx.run_in_worker(
                    "verifiers.domains.finance._pdf:extract_pages",
                    {"path": str(self.path), "max_pages": self.max_pages, "pages": chunk},
                    timeout=min(self.timeout, self.ctx.remaining()),
                    memory_mb=self.memory_mb,
                )
                for chunk in (_chunks(todo, workers) if todo else [[]])
            )
        )
        new: dict[str, Any] = {}
        for result in results:
            if not isinstance(result, dict) or not _int(result.get("pages")):
                raise BadInput(f"PDF {str(self.path)!r}: extraction returned no pages")
            self.count = int(result["pages"])
            new.update(result.get("read") or {})
        self.read.update(new)
        pdf_cache.merge(self.key, {"pages": self.count, "read": new})
        self.needed = {p for p in self.needed if 1 <= p <= self._check_count()}

    async def index(self) -> PageIndex | None:
        """The pdfium page index (built once per document and cached), or None."""
        assert self.count is not None
        await self._fetch_index()
        return page_index(self.index_data, self.count)

    async def _fetch_index(self) -> None:
        if self.index_data is None:
            try:
                self.index_data = await self.ctx.run_in_worker(
                    "verifiers.domains.finance._pdfindex:index_pdf",
                    {"path": str(self.path), "max_pages": self.max_pages},
                    timeout=min(self.timeout, self.ctx.remaining()),
                    memory_mb=self.memory_mb,
                )
            except VerifierTimeout:
                raise
            except VerifierError:
                # pdfium cannot read (or crashed on) a file pdfplumber reads: the index is a
                # shortcut only, so every page is parsed, as before the index existed.
                self.index_data = {"failed": True}
            pdf_cache.merge(self.key, {"index": self.index_data})

    def has(self, page: int, what: str) -> bool:
        found = self.read.get(str(page))
        if found is None:
            return False
        if what == "tables":
            return bool(found.get("tables"))
        if what == "scale":
            return bool(found.get("text")) and bool(detect_scale(str(found["text"])))
        return bool(found.get("tables")) or bool(str(found.get("text", "")).strip())

    async def first_with(self, what: str, candidates: list[int]) -> None:
        """Take ``candidates`` in order until one has ``what`` (tables, a scale note, content)."""
        step = _PAGES_PER_PROCESS
        for i, page in enumerate(candidates):
            if page not in self.needed:
                await self.parse(candidates[i : i + step])
                step *= 2
            if self.has(page, what):
                return

    async def load(self, needs: PdfNeeds, declared: str) -> None:
        cited: set[int] = {1}
        search: list[Number] = []
        for number, cite in needs.figures:
            cite = cite or {}
            page, paragraph = cite.get("page"), cite.get("paragraph", cite.get("text"))
            if isinstance(page, int) and _int(page):
                cited.add(page)
            if isinstance(paragraph, int) and _int(paragraph):
                cited.add(paragraph + 1)  # a PDF's paragraph p is the text of page p + 1
            searches_text = paragraph is not None or (
                cite.get("row") is None and cite.get("column") is None
            )
            if not _int(page) or (searches_text and not _int(paragraph)):
                search.append(number)
        # Distinct figures only; past a bound, every page (a cost bounded by the page count
        # and paid once per document, where 600 literals x 300 pages of index lookups would
        # hold the engine's event loop for seconds).
        search = list({(abs(n.value), n.decimals, n.scale): n for n in search}.values())
        if len(search) > _MAX_SEARCHED_FIGURES:
            needs = _FULL
        if search and not needs.full:
            # The index is needed anyway: build it while the cited pages are parsed.
            await asyncio.gather(self.parse(cited), self._fetch_index())
        else:
            await self.parse(cited)
        count = self._check_count()
        if needs.full:
            await self.parse(range(1, count + 1))
            return
        need_scale = not declared and not self.has(1, "scale")
        need_table = not self.has(1, "tables")
        if not (search or need_scale or need_table):
            return
        index = await self.index()
        if index is None:
            await self.parse(range(1, count + 1))
            return
        pages: set[int] = set()
        for number in search:
            pages |= index.candidates(number)
        await self.parse(pages)
        if need_scale:
            # The document's scale note is the first one in page order.
            await self.first_with("scale", index.scale_pages())
        if need_table:
            # Feedback names the first table that lacks a cited row: it must be the same one.
            await self.first_with("tables", index.digit_pages())
        if not any(self.has(p, "content") for p in self.needed):
            await self.first_with("content", index.text_pages() or list(range(1, count + 1)))

    def document(self, declared: str, text: list[str]) -> Document:
        assert self.count is not None
        count = self.count
        loaded = tuple(sorted(self.needed))
        complete = len(loaded) == count
        if not any(self.has(p, "content") for p in loaded):
            raise no_text_error(str(self.path))
        doc_key = f"{self.key}|{loaded}|{declared}|{json.dumps(text)}"
        found = pdf_cache.documents.get(doc_key)
        if found is not None:
            return found
        tables: list[Table] = []
        for page in loaded:
            for ordinal, table in enumerate(self.read[str(page)].get("tables", [])):
                tables.append(
                    Table(
                        rows=table["rows"],
                        page=page,
                        index=len(tables) if complete else -1,
                        scale=str(table.get("scale") or ""),
                        strategy=str(table.get("strategy", "lines")),
                        ordinal=ordinal,
                    )
                )
        pages = [
            str(self.read[str(p)].get("text", "")) if p in self.needed else ""
            for p in range(1, count + 1)
        ]
        scale = declared or next(
            (s for p in loaded if (s := detect_scale(str(self.read[str(p)].get("text", ""))))),
            "",
        )
        doc = Document(tables, pages + list(text), scale, "pdf")
        pdf_cache.documents.put(doc_key, doc)
        return doc


async def load_document(
    document: dict[str, Any],
    trajectory: Trajectory,
    ctx: VerifierContext,
    *,
    pdf_timeout: float,
    pdf_memory_mb: int,
    max_pages: int,
    needs: PdfNeeds | None = None,
) -> tuple[Document, dict[str, Any]]:
    """Turn ``task.spec.document`` into a Document.

    A PDF is read lazily: only the pages ``needs`` asks for (see :class:`PdfNeeds` and
    ``_pdfindex``) are parsed; ``needs=None`` parses every page.

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
        lazy = _LazyPdf(
            path,
            f"{digest}-v{EXTRACTOR_VERSION}",
            ctx,
            timeout=pdf_timeout,
            memory_mb=pdf_memory_mb,
            max_pages=max_pages,
        )
        await lazy.load(needs or _FULL, declared)
        doc = lazy.document(declared, list(text))
        return doc, {
            "source": "pdf",
            "sha256": digest,
            "pdf_cached": lazy.cached,
            "pages_read": len(lazy.needed),
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
    pd = MissingDependency.require("pandas", "finance")
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
    pd = MissingDependency.require("pandas", "finance")
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
