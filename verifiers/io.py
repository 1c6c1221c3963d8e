"""Streaming trajectory input and result output: JSONL (and Parquet through pyarrow).

Reading never raises for a bad *line*: every non-empty line of the input becomes exactly one
item, either a :class:`~verifiers.types.Trajectory` or a ready-made ``error`` result of kind
``bad_input`` carrying the 1-based line number, the reason and, when it can be recovered, the
line's ``id``. Empty (whitespace-only) lines are skipped and produce nothing. Memory stays
bounded: lines are read one at a time and a line longer than ``max_line_bytes`` is skipped in
chunks without ever being held whole.

Resuming (``verifiers score --resume``) relies on one invariant: results are written in input
order, so an interrupted output file holds the results of a *prefix* of the input (possibly
ending in a half-written line, which :func:`prepare_resume` truncates away). Lines are matched
by id, counting repeats: if the output already holds ``k`` results with id ``"a"``, the first
``k`` input lines with id ``"a"`` are skipped. Lines without an id are matched by position the
same way (the ``k`` id-less results already written stand for the first ``k`` id-less input
lines, i.e. for their line numbers), so files without ids resume correctly too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from .errors import BadInput, InfraError
from .types import Result, Trajectory

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "Format",
    "InputRecord",
    "ParquetResultWriter",
    "ResultWriter",
    "ResumeState",
    "detect_format",
    "iter_records",
    "open_result_writer",
    "parse_line",
    "prepare_resume",
    "read_results",
    "read_trajectories",
    "skip_done",
    "validation_reason",
]

DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024
"""Longest accepted input line (32 MiB); longer lines become ``bad_input`` results."""

_CHUNK = 1024 * 1024
_ID_PEEK_BYTES = 64 * 1024
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')
_ID_VALUE = re.compile(r'\s*:\s*("(?:[^"\\]|\\.){0,1024}"|-?\d{1,64})\s*[,}]')
_TYPE_TAG = re.compile(r"^(str|int|float|bool|none|dict|list|function-\w+)(\[.*\])?$|\[")

Format = Literal["jsonl", "parquet"]


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One non-empty input line: its 1-based line number and what it parsed into."""

    line: int
    item: Trajectory | Result

    @property
    def key(self) -> str | None:
        """The id used to match this line with an existing result on ``--resume``."""
        ident = self.item.id
        return None if ident is None else str(ident)


# -- reading -------------------------------------------------------------------------------


def _recover_id(raw: bytes | bytearray) -> str | None:
    """The top-level ``id`` of a broken line, from its first 64 KiB (best effort).

    A small tokenizer tracks nesting so that an ``"id"`` key inside ``task`` or
    ``metadata`` is never mistaken for the line's own.
    """
    text = raw[:_ID_PEEK_BYTES].decode("utf-8", "replace")
    depth = 0
    prev = ""
    for token in _TOKEN.finditer(text):
        tok = token.group(0)
        if tok in ("{", "["):
            depth += 1
        elif tok in ("}", "]"):
            depth -= 1
        elif tok.startswith('"') and depth == 1 and prev in ("{", ","):
            value = _ID_VALUE.match(text, token.end()) if tok == '"id"' else None
            if value is not None:
                try:
                    return text_id(json.loads(value.group(1)))
                except ValueError:
                    return None
        prev = tok
    return None


def validation_reason(exc: ValidationError, what: str = "trajectory") -> str:
    """A short readable reason for a pydantic error, naming the offending field.

    Union members (``completion.str``, ``completion.list[Message]``) are folded into their
    field so the reason reads ``field 'completion': ...`` rather than listing type tags.
    """
    grouped: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False):
        parts = [str(p) for p in err["loc"] if not _TYPE_TAG.search(str(p))]
        loc = ".".join(parts)
        msg = str(err["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        msgs = grouped.setdefault(loc, [])
        if msg not in msgs:
            msgs.append(msg)
    if not grouped:
        return f"invalid {what}"
    loc, msgs = next(iter(grouped.items()))
    text = " or ".join([msgs[0], *(m[:1].lower() + m[1:] for m in msgs[1:])])
    where = f"field '{loc}': " if loc else ""
    more = len(grouped) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"invalid {what}: {where}{text}{suffix}"


def _bad(
    line: int, reason: str, raw: bytes | bytearray | None = None, ident: str | None = None
) -> Result:
    if ident is None and raw is not None:
        ident = _recover_id(raw)
    return Result.errored("bad_input", reason, line=line).model_copy(update={"id": ident})


def text_id(value: object) -> str | None:
    """``value`` as a result id, or ``None`` when it cannot be one.

    It cannot be one when of the wrong type, or holding a lone surrogate that no JSON writer
    could emit.
    """
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def _parse_slow(
    line: int, raw: bytes | bytearray, json_error: str | None = None
) -> Trajectory | Result:
    r"""Classify why a line failed the fast path (or validate a dict-shaped line).

    ``json_error`` is the strict parser's complaint, when it had one: text that Python's
    lenient ``json`` accepts (lone surrogate escapes such as ``"\ud800"``) is still rejected,
    because no result carrying it could be written back as UTF-8.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _bad(line, f"line is not valid UTF-8 (byte {exc.start})", raw)
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = (
            f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else "nested too deeply"
        )
        return _bad(line, f"line is not valid JSON: {detail}", raw)
    if json_error is not None:
        detail = json_error.removeprefix("Invalid JSON: ").replace(
            " at line 1 column ", " at column "
        )
        return _bad(line, f"line is not valid JSON: {detail}", raw)
    if not isinstance(obj, dict):
        return _bad(line, f"line is JSON but not an object (got {type(obj).__name__})", raw)
    try:
        return trajectory_from(obj)
    except BadInput as exc:
        return _bad(line, exc.message, ident=text_id(obj.get("id")))


def trajectory_from(obj: object) -> Trajectory:
    """``obj`` (a mapping or a ``Trajectory``) as a validated trajectory.

    The one place a trajectory is validated, for the file reader and for items handed to
    the engine from Python alike, so the same bad input is worded the same from both.

    Raises:
        BadInput: ``obj`` is not a valid trajectory; the message names the field.
    """
    if isinstance(obj, Trajectory):
        return obj
    try:
        return Trajectory.model_validate(obj)
    except ValidationError as exc:
        raise BadInput(validation_reason(exc)) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise BadInput(f"invalid trajectory: {exc}") from None


def parse_line(line: int, raw: bytes | bytearray) -> Trajectory | Result:
    """Parse one raw JSONL line (without its newline) into a trajectory or an error result."""
    try:
        return Trajectory.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[:1]
        if first and first[0]["type"] == "json_invalid":
            return _parse_slow(line, raw, json_error=str(first[0]["msg"]))
        return _parse_slow(line, raw)
    except (ValueError, RecursionError):
        return _parse_slow(line, raw)


STDIO = "-"
"""The path that means standard input (for reading) or standard output (for writing)."""


def is_stdio(path: Path | str) -> bool:
    """True for ``-``: standard input when read, standard output when written."""
    return str(path) == STDIO


def _open_input(path: Path) -> IO[bytes]:
    """Open ``path`` for reading, turning user-fixable problems into :class:`BadInput`.

    ``-`` is standard input (a duplicate of its descriptor, so closing it is harmless).
    """
    if is_stdio(path):
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    if path.is_dir():
        raise BadInput(f"{str(path)!r} is a directory", hint="give a .jsonl or .parquet file")
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise BadInput(f"input file {str(path)!r} not found") from None
    except PermissionError:
        raise BadInput(f"input file {str(path)!r} is not readable") from None
    except OSError as exc:
        raise BadInput(f"cannot open {str(path)!r}: {exc.strerror or exc}") from None


def _read_long_line(
    handle: IO[bytes], first: bytes, max_line_bytes: int
) -> tuple[bytearray | None, bytes, int]:
    """Finish reading a line longer than one chunk, holding at most ``max_line_bytes``.

    Returns ``(line, head, size)``: ``line`` is ``None`` when the line exceeds the cap (the
    rest is then read and dropped chunk by chunk); ``head`` is its first 64 KiB (to recover
    the id); ``size`` its length in bytes.
    """
    buffer: bytearray | None = bytearray(first)
    head = first[:_ID_PEEK_BYTES]
    size = len(first)
    while True:
        chunk = handle.readline(_CHUNK)
        size += len(chunk)
        if len(head) < _ID_PEEK_BYTES:
            head += chunk[: _ID_PEEK_BYTES - len(head)]
        if buffer is not None:
            if size - chunk.endswith(b"\n") > max_line_bytes:
                buffer = None  # too large: stop keeping it, keep reading to its end
            else:
                buffer += chunk
        if not chunk or chunk.endswith(b"\n"):
            return buffer, head, size


def _iter_jsonl(path: Path, max_line_bytes: int) -> Iterator[InputRecord]:
    with _open_input(path) as handle:
        number = 0
        while True:
            raw: bytes | bytearray = handle.readline(_CHUNK)
            if not raw:
                return
            number += 1
            if len(raw) == _CHUNK and not raw.endswith(b"\n"):
                line, head, size = _read_long_line(handle, bytes(raw), max_line_bytes)
                if line is None:
                    reason = (
                        f"line is too large ({size:,} bytes > limit of {max_line_bytes:,}"
                        " bytes; raise it with --max-line-bytes)"
                    )
                    yield InputRecord(number, _bad(number, reason, head))
                    continue
                raw = line
            elif len(raw) - raw.endswith(b"\n") > max_line_bytes:
                reason = (
                    f"line is too large ({len(raw):,} bytes > limit of {max_line_bytes:,}"
                    " bytes; raise it with --max-line-bytes)"
                )
                yield InputRecord(number, _bad(number, reason, bytes(raw)))
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.endswith(b"\n"):
                raw = raw[:-1] if isinstance(raw, bytes) else _chop(raw)
            if not raw or raw.isspace():
                continue
            yield InputRecord(number, parse_line(number, raw))


def _chop(buffer: bytearray) -> bytearray:
    del buffer[-1]  # in place: a long line is not copied
    return buffer


def _strip_nones(value: Any) -> Any:
    """Drop ``None`` struct fields pyarrow adds for keys a row never had."""
    if isinstance(value, dict):
        return {k: _strip_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nones(v) for v in value]
    return value


_JSON_COLUMNS = ("prompt", "completion", "task", "artifacts", "metadata")


def _iter_parquet(path: Path) -> Iterator[InputRecord]:
    if not path.exists():
        raise BadInput(f"input file {str(path)!r} not found")
    if path.is_dir():
        raise BadInput(f"{str(path)!r} is a directory", hint="give a .jsonl or .parquet file")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        from .errors import MissingDependency

        raise MissingDependency("pyarrow", "parquet") from None
    try:
        reader = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid/OSError family
        raise BadInput(f"{str(path)!r} is not a readable Parquet file: {exc}") from None
    number = 0
    batches = reader.iter_batches(batch_size=4096)
    while True:
        try:
            batch = next(batches, None)
        except Exception as exc:  # a corrupt row group: a file-level problem
            raise BadInput(f"{str(path)!r}: unreadable Parquet data: {exc}") from None
        if batch is None:
            return
        for row in batch.to_pylist():
            number += 1
            obj: dict[str, Any] = {}
            for key, value in row.items():
                if value is None:
                    continue
                if key in _JSON_COLUMNS and isinstance(value, str) and key != "prompt":
                    # Nested fields may be stored as JSON text (lossless); plain strings are
                    # only valid for prompt/completion, so try JSON first for the others.
                    if key != "completion" or value.lstrip().startswith("["):
                        try:
                            value = json.loads(value)
                        except ValueError:
                            pass
                obj[key] = _strip_nones(value) if key in ("task", "artifacts") else value
            try:
                yield InputRecord(number, trajectory_from(obj))
            except BadInput as exc:
                ident = text_id(obj.get("id"))
                yield InputRecord(number, _bad(number, exc.message, ident=ident))


def detect_format(path: Path) -> Format:
    """``parquet`` for ``*.parquet``/``*.pq`` files, else ``jsonl``."""
    return "parquet" if path.suffix.lower() in (".parquet", ".pq") else "jsonl"


def iter_records(
    path: Path,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    fmt: Format | None = None,
) -> Iterator[InputRecord]:
    """Every non-empty input line as an :class:`InputRecord`, in order, streaming.

    Raises:
        BadInput: the file is missing, a directory, unreadable, or not Parquet when it should
            be. Problems *inside* a line never raise; they become error records.
    """
    fmt = fmt or detect_format(path)
    if fmt == "parquet":
        return _iter_parquet(path)
    if is_stdio(path):
        return _iter_jsonl(path, max_line_bytes)
    if path.is_dir():  # fail at call time, not at first next()
        raise BadInput(f"{str(path)!r} is a directory", hint="give a .jsonl or .parquet file")
    if not path.exists():
        raise BadInput(f"input file {str(path)!r} not found")
    return _iter_jsonl(path, max_line_bytes)


def read_trajectories(
    path: Path,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    fmt: Format | None = None,
) -> Iterator[Trajectory | Result]:
    """Trajectories (or ``bad_input`` results for broken lines), in input order."""
    for record in iter_records(path, max_line_bytes=max_line_bytes, fmt=fmt):
        yield record.item


def read_results(path: Path) -> Iterator[Result]:
    """Results from a scored JSONL (or Parquet) file, in order; unparsable lines are skipped.

    Raises:
        BadInput: the file is missing or is a directory.
    """
    if detect_format(path) == "parquet":
        yield from _read_parquet_results(path)
        return
    with _open_input(path) as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                yield Result.model_validate_json(raw)
            except ValueError:
                continue


# -- resume ----------------------------------------------------------------------------------


@dataclass
class ResumeState:
    """What an earlier, interrupted run already wrote.

    Result counts per id (``None`` for results without an id). :meth:`consume` says whether
    an input line is already done.
    """

    done: Counter[str | None]
    results: int = 0
    truncated_bytes: int = 0

    def consume(self, key: str | None) -> bool:
        """True (and count it) when a result for this input line is already in the output."""
        left = self.done.get(key, 0)
        if left <= 0:
            return False
        self.done[key] = left - 1
        return True


def prepare_resume(output: Path) -> ResumeState:
    """Read ids already in ``output`` and cut a half-written last line (after ``kill -9``).

    A missing output file means nothing is done yet. A complete line that is not a result is
    tolerated only as the last line (a crash between two writes); elsewhere the file is not a
    scored file and resuming into it would be wrong.

    Raises:
        BadInput: ``output`` is a directory, unreadable, or not a scored JSONL file.
    """
    state = ResumeState(done=Counter())
    if not output.exists():
        return state
    if output.is_dir():
        raise BadInput(f"output {str(output)!r} is a directory")
    if detect_format(output) == "parquet":
        raise BadInput("--resume needs a JSONL output file", hint="use --format jsonl")
    try:
        handle = output.open("r+b")
    except OSError as exc:
        raise BadInput(f"cannot open {str(output)!r} for resuming: {exc.strerror}") from None
    with handle:
        good_end = 0
        number = 0
        pending_bad: int | None = None
        while True:
            raw = handle.readline()
            if not raw:
                break
            number += 1
            if not raw.endswith(b"\n"):
                break  # half-written tail: truncated below
            if pending_bad is not None:
                raise BadInput(
                    f"line {pending_bad} of {str(output)!r} is not a result; refusing to resume",
                    hint="write to a new output file, or delete this one",
                )
            if not raw.strip():
                good_end = handle.tell()
                continue
            try:
                result = Result.model_validate_json(raw)
            except ValueError:
                pending_bad = number
                continue
            state.done[result.id] += 1
            state.results += 1
            good_end = handle.tell()
        size = handle.seek(0, os.SEEK_END)
        if size > good_end:
            handle.truncate(good_end)
            state.truncated_bytes = size - good_end
    return state


def skip_done(records: Iterable[InputRecord], state: ResumeState) -> Iterator[InputRecord]:
    """The records whose results are not in the output yet (see module docs)."""
    for record in records:
        if not state.consume(record.key):
            yield record


# -- writing ---------------------------------------------------------------------------------


def _unwritable(result: Result, exc: Exception) -> Result:
    """An ``error`` result standing in for one that cannot be serialised.

    A verifier put a non-JSON object or a lone surrogate into it: the file must still get its
    line.
    """
    ident = result.id
    if ident is not None:
        ident = ident.encode("utf-8", "replace").decode("utf-8")
    message = f"the verifier's result could not be written as JSON: {str(exc)[:200]}"
    message = message.encode("utf-8", "replace").decode("utf-8")
    line = result.error.line if result.error is not None else None
    return Result.errored("verifier", message, line=line).model_copy(
        update={"id": ident, "verifier": result.verifier, "duration_s": result.duration_s}
    )


_to_json = Result.__pydantic_serializer__.to_json
"""``Result.model_dump_json`` minus a decode/encode round trip (same bytes)."""


class ResultWriter:
    """Appends results as JSONL, flushing at least every ``flush_s`` seconds.

    A result is written with one ``write`` call; after a crash the file holds whole lines
    plus at most one partial line, which :func:`prepare_resume` removes.
    """

    def __init__(self, path: Path, *, append: bool = False, flush_s: float = 0.5) -> None:
        self.path = path
        self.count = 0
        self._flush_s = flush_s
        self._last_flush = time.monotonic()
        self._handle: IO[bytes] = _open_output(path, "ab" if append else "wb")

    def write(self, result: Result) -> None:
        """Write one result line.

        Raises:
            InfraError: the disk refused the write (full, gone); the message says why.
        """
        try:
            try:
                data = _to_json(result)
            except (PydanticSerializationError, ValueError):
                # Model text in feedback/details (a lone surrogate) or a stray object: write
                # the verdict itself, made safe, never an error in its place (json_safe).
                try:
                    data = _to_json(result.json_safe())
                except (PydanticSerializationError, ValueError) as exc:
                    data = _to_json(_unwritable(result, exc))
            self._handle.write(data + b"\n")
            self.count += 1
            now = time.monotonic()
            if now - self._last_flush >= self._flush_s:
                self._handle.flush()
                self._last_flush = now
        except OSError as exc:
            raise _write_error(self.path, exc) from None

    def flush(self) -> None:
        """Push buffered lines to the OS (they survive a ``kill -9`` from then on)."""
        try:
            self._handle.flush()
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush and close the file."""
        if not self._handle.closed:
            try:
                self._handle.flush()
            except OSError as exc:
                with contextlib.suppress(OSError):  # closes the fd, re-raises the flush error
                    self._handle.close()
                raise _write_error(self.path, exc) from None
            self._handle.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_error(path: Path, exc: OSError) -> InfraError:
    return InfraError(
        f"cannot write {str(path)!r}: {exc.strerror or exc}",
        hint="free disk space, then rerun with --resume",
    )


def _open_output(path: Path, mode: str) -> IO[bytes]:
    if is_stdio(path):  # standard output, through a duplicate descriptor (closing it is safe)
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=1024 * 1024)
    if path.is_dir():
        raise BadInput(f"output {str(path)!r} is a directory", hint="give a file path with -o")
    try:
        return path.open(mode, buffering=1024 * 1024)
    except FileNotFoundError:
        raise BadInput(
            f"output directory {str(path.parent)!r} does not exist", hint="create it first"
        ) from None
    except OSError as exc:
        raise BadInput(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None


_RESULT_JSON_COLUMNS = ("components", "details", "error")


class ParquetResultWriter(ResultWriter):
    """Writes results to Parquet in row groups; nested fields are JSON text columns."""

    def __init__(self, path: Path, *, batch: int = 10_000) -> None:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            from .errors import MissingDependency

            raise MissingDependency("pyarrow", "parquet") from None
        self.path = path
        self.count = 0
        self._pa = pa
        self._batch = batch
        self._rows: list[dict[str, Any]] = []
        self._handle = _open_output(path, "wb")
        self._schema = pa.schema(
            [
                ("id", pa.string()),
                ("reward", pa.float64()),
                ("status", pa.string()),
                ("components", pa.string()),
                ("feedback", pa.string()),
                ("details", pa.string()),
                ("error", pa.string()),
                ("verifier", pa.string()),
                ("duration_s", pa.float64()),
                ("cached", pa.bool_()),
            ]
        )
        self._writer = pq.ParquetWriter(self._handle, self._schema)

    def write(self, result: Result) -> None:
        """Buffer one result; a full row group is written out."""
        row = result.json_safe().model_dump(mode="json")
        for key in _RESULT_JSON_COLUMNS:
            row[key] = None if row[key] is None else json.dumps(row[key])
        self._rows.append(row)
        self.count += 1
        if len(self._rows) >= self._batch:
            self.flush()

    def flush(self) -> None:
        """Write the buffered results as one row group."""
        if self._rows:
            table = self._pa.Table.from_pylist(self._rows, schema=self._schema)
            self._writer.write_table(table)
            self._rows = []

    def close(self) -> None:
        """Write what is buffered and close the file."""
        if not self._handle.closed:
            self.flush()
            self._writer.close()
            self._handle.close()


def _read_parquet_results(path: Path) -> Iterator[Result]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            for key in _RESULT_JSON_COLUMNS:
                if isinstance(row.get(key), str):
                    row[key] = json.loads(row[key])
            try:
                yield Result.model_validate(row)
            except ValidationError:
                continue


def open_result_writer(path: Path, *, fmt: Format = "jsonl", append: bool = False) -> ResultWriter:
    """A writer for ``path`` in ``fmt``.

    Raises:
        BadInput: the output is a directory, its directory is missing, or it is not writable;
            appending to Parquet is not possible.
    """
    if fmt == "parquet":
        if append:
            raise BadInput("cannot append to a Parquet file", hint="use --format jsonl")
        return ParquetResultWriter(path)
    return ResultWriter(path, append=append)
