"""PDF table extraction with pdfplumber: the worker-process half.

:func:`extract_tables` is the target of ``ctx.run_in_worker`` (JSON payload in, JSON out), so
a PDF that makes pdfminer loop or balloon is killed with its worker and never stalls the
engine. Pages that print a glyph twice (fake bold) are read through ``dedupe_chars``;
tables come from the *lines* strategy when the page has ruling lines and from the *text*
strategy otherwise (statements are often unruled). Cells that hold several rows at once
(the nics report rules a line only every fifth row, so pdfplumber returns five state names in
one cell) are split back into rows when every filled cell of the row has the same number of
lines.
"""

from __future__ import annotations

from typing import Any

from verifiers.errors import BadInput, MissingDependency

from ._document import detect_scale
from ._numbers import parse_number

__all__ = [
    "EXTRACTOR_VERSION",
    "extract_pages",
    "extract_tables",
    "no_text_error",
    "split_multiline_rows",
]

EXTRACTOR_VERSION = "3"
"""Bumped when extraction output changes; part of the cache key."""

_TEXT_SETTINGS = {"vertical_strategy": "text", "horizontal_strategy": "text"}
_MAX_TEXT_PER_PAGE = 50_000


def split_multiline_rows(rows: list[list[str | None]]) -> list[list[str]]:
    """Split rows whose filled cells all hold the same number (> 1) of lines.

    Other cells with line breaks (a wrapped label, a two-line header) are joined with spaces.
    """
    out: list[list[str]] = []
    for row in rows:
        cells = ["" if c is None else str(c) for c in row]
        filled = [c for c in cells if c.strip()]
        counts = {c.strip().count("\n") + 1 for c in filled}
        if len(filled) >= 2 and len(counts) == 1 and (k := counts.pop()) > 1:
            parts = [c.strip().split("\n") if c.strip() else [""] * k for c in cells]
            out.extend([p[i].strip() for p in parts] for i in range(k))
        else:
            out.append([" ".join(c.split()) for c in cells])
    return out


def _has_duplicate_chars(chars: list[dict[str, Any]]) -> bool:
    """Whether any glyph is printed twice at (nearly) the same place (fake-bold PDFs).

    pdfplumber's ``dedupe_chars`` costs seconds on a dense page, and most pages have no
    duplicates; this linear scan decides whether it is needed.
    """
    seen: set[tuple[Any, ...]] = set()
    for ch in chars:
        key = (ch.get("text"), round(float(ch["x0"])), round(float(ch["top"])), ch.get("fontname"))
        if key in seen:
            return True
        seen.add(key)
    return False


def _useful(rows: list[list[str]]) -> bool:
    if len(rows) < 2 or max((len(r) for r in rows), default=0) < 2:
        return False
    return any(parse_number(c) is not None for r in rows for c in r[1:])


def _open(path: str) -> Any:
    """``pdfplumber.open`` with its failures as ``BadInput`` naming the file."""
    try:
        import pdfplumber
        from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
        from pdfminer.pdfparser import PDFSyntaxError
        from pdfplumber.utils.exceptions import PdfminerException
    except ImportError:
        raise MissingDependency("pdfplumber", "finance") from None
    try:
        return pdfplumber.open(path)
    except PdfminerException as exc:
        inner = exc.args[0] if exc.args else exc
        if isinstance(inner, PDFPasswordIncorrect | PDFEncryptionError):
            raise BadInput(f"PDF {path!r} is encrypted (password protected)") from None
        reason = str(inner) or type(inner).__name__
        raise BadInput(f"PDF {path!r} is empty or malformed: {reason}") from None
    except (PDFSyntaxError, OSError, ValueError) as exc:
        raise BadInput(f"PDF {path!r} cannot be read: {exc}") from None


def _read_page(page: Any) -> dict[str, Any]:
    """One page's text, scale note and useful tables (``{"text", "scale", "tables"}``)."""
    if _has_duplicate_chars(page.chars):
        page = page.dedupe_chars()
    text = (page.extract_text() or "")[:_MAX_TEXT_PER_PAGE]
    page_scale = detect_scale(text)
    found = [split_multiline_rows(t) for t in page.extract_tables()]
    strategy = "lines"
    found = [t for t in found if _useful(t)]
    if not found:
        strategy = "text"
        found = [split_multiline_rows(t) for t in page.extract_tables(_TEXT_SETTINGS)]
        found = [t for t in found if _useful(t)]
    return {
        "text": text,
        "scale": page_scale,
        "tables": [{"strategy": strategy, "scale": page_scale, "rows": rows} for rows in found],
    }


def extract_pages(payload: dict[str, Any]) -> dict[str, Any]:
    """Extract the text and tables of some pages of a PDF (the lazy reader's unit of work).

    Args:
        payload: ``{"path": str, "pages": [1-based page numbers], "max_pages": int}``; page
            numbers beyond the document are ignored.

    Returns:
        ``{"pages": n, "read": {"<page>": {"text", "scale", "tables": [{"strategy", "scale",
        "rows"}]}}}``: ``n`` is the document's page count.

    Raises:
        BadInput: the file is empty, encrypted, not a PDF, damaged, has no pages or more than
            ``max_pages``.
        MissingDependency: pdfplumber is not installed.
    """
    from pdfminer.pdfparser import PDFSyntaxError
    from pdfplumber.utils.exceptions import PdfminerException

    path = str(payload["path"])
    max_pages = int(payload.get("max_pages", 200))
    wanted = sorted({int(p) for p in payload.get("pages", [])})
    pdf = _open(path)
    read: dict[str, Any] = {}
    try:
        with pdf:
            count = len(pdf.pages)
            if not count:
                raise BadInput(f"PDF {path!r} has no pages")
            if count > max_pages:
                raise BadInput(f"PDF {path!r} has {count} pages; the limit is {max_pages}")
            for number in wanted:
                if 1 <= number <= count:
                    page = pdf.pages[number - 1]
                    read[str(number)] = _read_page(page)
                    page.close()  # drop the page's layout objects: memory stays per page
    except PdfminerException as exc:
        inner = exc.args[0] if exc.args else exc
        raise BadInput(f"PDF {path!r} is malformed: {inner}") from None
    except (PDFSyntaxError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"PDF {path!r} is malformed: {type(exc).__name__}: {exc}") from None
    return {"pages": count, "read": read}


def no_text_error(path: str) -> BadInput:
    """The error of a PDF without a table or a line of text on any page."""
    return BadInput(f"PDF {path!r} has no extractable text (a scanned image?)")


def extract_tables(payload: dict[str, Any]) -> dict[str, Any]:
    """Extract every table and the text of a PDF (every page, in one process).

    Args:
        payload: ``{"path": str, "max_pages": int}``.

    Returns:
        ``{"pages": n, "scale": str, "text": [page text...], "tables": [{"page", "index",
        "strategy", "scale", "rows"}...]}``.

    Raises:
        BadInput: the file is empty, encrypted, not a PDF, damaged, or has no text at all.
        MissingDependency: pdfplumber is not installed.
    """
    path = str(payload["path"])
    max_pages = int(payload.get("max_pages", 200))
    out = extract_pages({"path": path, "max_pages": max_pages, "pages": range(1, max_pages + 1)})
    texts: list[str] = []
    tables: list[dict[str, Any]] = []
    for number in range(1, out["pages"] + 1):
        page = out["read"][str(number)]
        texts.append(page["text"])
        for table in page["tables"]:
            tables.append({"page": number, "index": len(tables), **table})
    if not tables and not any(t.strip() for t in texts):
        raise no_text_error(path)
    return {
        "pages": len(texts),
        "scale": detect_scale("\n".join(texts)),
        "text": texts,
        "tables": tables,
    }
