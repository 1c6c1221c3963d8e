"""``verifiers score``: stream a trajectory file through the engine into a scored file."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import shlex
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TextIO

from ..engine import Engine, EngineSettings
from ..errors import BadInput, RunAborted
from ..io import (
    DEFAULT_MAX_LINE_BYTES,
    Format,
    InputRecord,
    ResumeState,
    detect_format,
    is_stdio,
    iter_records,
    open_result_writer,
    prepare_resume,
)
from ..settings import env
from ..summary import Summary
from ..types import Result, Trajectory
from ._hints import BAD_INPUT_SHARE, diagnose_input

__all__ = ["FAIL_FAST_AFTER", "add_parser", "default_output", "run_score"]

FAIL_FAST_AFTER = 10
"""``verifiers score`` stops after this many identical non-retryable infra errors in a row
(``--fail-fast-after``; the library's own default, ``EngineSettings.fail_fast_after``, is 0)."""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register the ``score`` verb."""
    p = sub.add_parser(
        "score",
        help="score a trajectory file (JSONL or Parquet)",
        description=(
            "Score every line of IN and write one result per line, in input order, to OUT. "
            "Broken lines become status=error results; the exit code is 0 whenever every "
            "line got a result."
        ),
    )
    p.add_argument(
        "input", type=Path, metavar="IN", help="trajectories (.jsonl or .parquet; - for stdin)"
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="OUT",
        help="scored file (default: IN with .scored.jsonl / .scored.parquet; - for stdout, "
        "the default when IN is -)",
    )
    p.add_argument("--concurrency", type=int, metavar="N", help="items verified at once")
    timeout = {"dest": "timeout_s", "type": float, "metavar": "S"}
    p.add_argument("--timeout", "--timeout-s", help="per-item deadline in seconds", **timeout)
    p.add_argument("--retries", type=int, metavar="N", help="extra attempts for infra errors")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes for heavy checks")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep results already in OUT and score only the lines missing from it",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite OUT when it already holds results (default: refuse; see --resume)",
    )
    p.add_argument(
        "--fail-fast-after",
        type=int,
        metavar="N",
        help=f"stop after N identical errors that no retry can fix, such as no Docker engine "
        f"(default {FAIL_FAST_AFTER}; 0 never stops; VERIFIERS_FAIL_FAST_AFTER)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument(
        "--cache-path",
        type=Path,
        metavar="PATH",
        help="cache database (default $VERIFIERS_CACHE_DIR/results.sqlite or ~/.cache/verifiers)",
    )
    p.add_argument(
        "--sandbox",
        metavar="NAME",
        help="sandbox backend for verifiers that run code: auto (default), docker, local, "
        "none, or a plugin's (see `verifiers list`)",
    )
    p.add_argument(
        "--no-build",
        action="store_true",
        help="do not build missing sandbox runtimes before scoring (their items are "
        "error/infra with the build command)",
    )
    p.add_argument("--summary-json", type=Path, metavar="PATH", help="write the summary as JSON")
    p.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        help="output format (default: from OUT's suffix, else jsonl)",
    )
    p.add_argument(
        "--max-line-bytes",
        type=int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"longest accepted input line (default {DEFAULT_MAX_LINE_BYTES})",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="score on a Ray cluster: 'auto' or HOST:PORT (one warm engine per node; "
        "pip install 'verifiers[ray]'; see docs/scale.md)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar, no table, no per-item warnings (errors still print)",
    )


def default_output(input_path: Path, fmt: Format) -> Path:
    """``data.jsonl`` -> ``data.scored.jsonl`` (``.scored.parquet`` for Parquet output)."""
    stem = input_path.name
    for suffix in (".jsonl", ".json", ".ndjson", ".parquet", ".pq"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return input_path.with_name(f"{stem}.scored.{'parquet' if fmt == 'parquet' else 'jsonl'}")


def _count_lines(path: Path) -> int | None:
    """Input size for the progress bar (a fast byte scan; ``None`` when unknown)."""
    if not path.is_file():  # a pipe (/dev/stdin, a FIFO) must not be read twice
        return None
    try:
        if detect_format(path) == "parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        count = 0
        last = b"\n"
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
        return count + (last != b"\n")
    except Exception:
        return None


def _check_input(input_path: Path) -> None:
    if input_path.is_dir():
        raise BadInput(f"{str(input_path)!r} is a directory", hint="give a .jsonl or .parquet file")
    if not input_path.exists():
        raise BadInput(f"input file {str(input_path)!r} not found")


def _check_output(input_path: Path, output: Path, *, resume: bool, force: bool) -> None:
    """Refuse to write over the input, or over earlier results without ``--resume``/``--force``.

    An output that holds anything (even one byte) is treated as earlier results: losing a
    20k-line run to a re-typed command is worse than typing ``--force``.
    """
    if is_stdio(output):
        if resume:
            raise BadInput(
                "--resume needs an output file, not standard output", hint="give -o PATH"
            )
        return
    if not is_stdio(input_path) and output.exists() and output.resolve() == input_path.resolve():
        raise BadInput("the output file is the input file", hint="choose another path with -o")
    if resume or force or not output.is_file():
        return
    try:
        size = output.stat().st_size
    except OSError:
        return
    if size > 0:
        raise BadInput(
            f"output {str(output)!r} already exists and is not empty ({size:,} bytes)",
            hint="add --resume to continue it, --force to overwrite it, or -o another path",
        )


def _resume_command(args: argparse.Namespace, output: Path) -> str:
    """The command line that continues this run: the user's own, plus ``--resume``."""
    argv = [a for a in getattr(args, "argv", None) or [] if a != "--force"]
    if not argv:
        argv = ["score", str(args.input)]
    if args.output is None:
        argv += ["-o", str(output)]
    if "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["verifiers", *argv])


def _resume_records(
    records: Iterator[InputRecord], resume: ResumeState, output: Path, input_path: Path
) -> Iterator[InputRecord]:
    """The input lines still to score (``skip_done``), refusing an output of another input.

    A scored file is written in input order from the first line, so the results of a run over
    this input are the results of its first lines. When the first line not yet scored comes
    and results with ids remain unmatched, the output holds results of another file:
    appending to it would mix two runs into one, so this raises before anything is written.

    Raises:
        BadInput: the output's results do not belong to the start of this input.
    """
    checked = False
    matched = 0
    for record in records:
        if resume.consume(record.key):
            matched += 1
            continue
        if not checked:
            checked = True
            unmatched = [k for k, n in resume.done.items() if k is not None and n > 0]
            if unmatched:
                left = sum(resume.done[k] for k in unmatched)
                raise BadInput(
                    f"--resume: {left:,} of the {resume.results:,} results in {str(output)!r} "
                    f"match no line at the start of {str(input_path)!r} (e.g. id "
                    f"{unmatched[0]!r}; {matched:,} matched): it is the output of another input",
                    hint="give the input it was scored from, or write to a new file with -o",
                )
        yield record


def _settings(args: argparse.Namespace) -> EngineSettings:
    # Cache on by default for the CLI; VERIFIERS_CACHE (0/1/path) can change the default.
    env_cache = env("VERIFIERS_CACHE") is not None
    cache: bool | Path | None = (
        False if args.no_cache else (args.cache_path or (None if env_cache else True))
    )
    fail_fast = args.fail_fast_after
    if fail_fast is None and env("VERIFIERS_FAIL_FAST_AFTER") is None:
        fail_fast = FAIL_FAST_AFTER
    return EngineSettings.from_flags(args, fail_fast_after=fail_fast, cache=cache)


class _Progress:
    """A rich progress bar on a terminal; nothing otherwise."""

    def __init__(self, enabled: bool, total: int | None, stream: TextIO) -> None:
        self._bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=True,
        )
        self._task = self._bar.add_task("score", total=total, rate="")
        self._started = self._shown = time.perf_counter()
        self._done = 0
        self._bar.start()

    def advance(self, n: int = 1) -> None:
        if self._bar is None:
            return
        self._done += n
        now = time.perf_counter()
        if self._done % 64 == 0 or now - self._shown >= 0.1:
            self._shown = now
            rate = self._done / max(1e-9, now - self._started)
            self._bar.update(self._task, completed=self._done, rate=f"{rate:,.0f}/s")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@contextlib.contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` at once, as outside asyncio.

    ``asyncio.run`` otherwise turns the first Ctrl-C into a cancellation of the main task,
    and Python 3.11's ``wait_for`` can drop a cancellation that arrives as the awaited job
    finishes (CPython gh-86296), so a first Ctrl-C could be lost and the run go on. A
    handler of our own makes asyncio leave SIGINT alone; the loop's tasks are still
    cancelled and their ``finally`` blocks (the result writer's flush) run on the way out.
    Only the main thread may set a handler, and one set by the caller (or SIGINT ignored,
    as a shell does for a background job) is kept.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


async def _stream(
    args: argparse.Namespace,
    settings: EngineSettings,
    records: Iterator[InputRecord],
    output: Path,
    fmt: Format,
    summary: Summary,
    progress: _Progress,
) -> dict[str, Any] | None:
    """Score into ``output``; returns ``--ray``'s placement stats (``None`` without Ray)."""
    writer = open_result_writer(output, fmt=fmt, append=args.resume)
    base_dir = Path.cwd() if is_stdio(args.input) else args.input.resolve().parent
    try:
        engine: Any
        if getattr(args, "ray", None):
            from ..ray import RayScorer

            engine = RayScorer(settings=settings, address=args.ray, base_dir=base_dir)
        else:
            engine = Engine(settings, base_dir=base_dir)
        async with engine:
            results = (
                _ray_lines(engine, records)
                if getattr(args, "ray", None)
                else engine.stream(records)
            )
            async for result in results:
                writer.write(result)
                summary.add(result)
                progress.advance()
        return dict(engine.stats.as_dict()) if getattr(args, "ray", None) else None
    finally:
        writer.close()


def _ray_line(stats: dict[str, Any]) -> str:
    """Where ``--ray`` scored the items: one line for the human summary."""
    nodes = ", ".join(f"{node[:12]}: {n:,}" for node, n in sorted(stats["by_node"].items()))
    return (
        f"ray: {stats['items']:,} items on {len(stats['by_node'])} node(s) ({nodes}); "
        f"{stats['retried']:,} retried, {stats['dead_actors']} actor(s) died, "
        f"{stats['failed']:,} unplaced (error/infra)"
    )


async def _ray_lines(engine: Any, records: Iterator[InputRecord]) -> AsyncIterator[Result]:
    """``RayScorer.stream`` over plain items, each error result given its line number.

    :class:`~verifiers.Engine` takes the records themselves and stamps lines in its one
    place; the Ray scorer does not take records yet (it ships items to remote engines), so
    its results are matched to their lines here, in input order.
    """
    lines: deque[int] = deque()

    def items() -> Iterator[Trajectory | Result]:
        for record in records:
            lines.append(record.line)
            yield record.item

    async for result in engine.stream(items()):
        line = lines.popleft()
        if result.error is not None and result.error.line is None:
            result = result.model_copy(
                update={"error": result.error.model_copy(update={"line": line})}
            )
        yield result


def run_score(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Run ``verifiers score``; returns the exit code.

    Raises:
        BadInput: a user-fixable problem (missing input, directory, unwritable output,
            invalid setting, an output that already holds results); the caller prints it as
            one line.
    """
    input_path: Path = args.input
    fmt: Format = args.format or (
        "parquet"
        if args.output is not None and detect_format(args.output) == "parquet"
        else "jsonl"
    )
    if not is_stdio(input_path):
        _check_input(input_path)
    output: Path = args.output or (
        Path("-") if is_stdio(input_path) else default_output(input_path, fmt)
    )
    _check_output(input_path, output, resume=args.resume, force=args.force)
    if args.resume and fmt == "parquet":
        raise BadInput("--resume needs a JSONL output file", hint="use --format jsonl")
    if is_stdio(output) and fmt == "parquet":
        raise BadInput("Parquet cannot be written to standard output", hint="give -o PATH")
    if args.max_line_bytes < 1:
        raise BadInput("--max-line-bytes must be positive")
    if args.summary_json is not None and not args.summary_json.resolve().parent.is_dir():
        raise BadInput(f"directory of --summary-json {str(args.summary_json)!r} does not exist")
    settings = _settings(args)
    with _cli_logging(args.quiet, stderr):
        return _score(args, settings, input_path, output, fmt, stdout, stderr)


def _score(
    args: argparse.Namespace,
    settings: EngineSettings,
    input_path: Path,
    output: Path,
    fmt: Format,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    if settings.cache is not False:
        # Fail fast, as one line with a hint, instead of one error result per item.
        from ..cache import ResultCache, default_cache_path

        ResultCache(default_cache_path() if settings.cache is True else settings.cache).close()
    if not args.no_build and not is_stdio(input_path) and not getattr(args, "ray", None):
        from ..sandbox._preflight import preflight

        head = iter_records(input_path, max_line_bytes=args.max_line_bytes)
        preflight(
            (r.item for r in head),
            settings.sandbox,
            lambda line: print(f"verifiers: {line}", file=stderr, flush=True),
        )
    records = iter_records(input_path, max_line_bytes=args.max_line_bytes)
    resume = ResumeState(done=Counter())
    if args.resume:
        resume = prepare_resume(output)
        records = _resume_records(records, resume, output, input_path)
    total = None
    show_progress = not args.quiet and stderr.isatty()
    if show_progress:
        counted = None if is_stdio(input_path) else _count_lines(input_path)
        total = None if counted is None else max(0, counted - resume.results)
    summary = Summary(sample_rewards=False)
    progress = _Progress(show_progress, total, stderr)
    # With results on stdout, the human summary goes to stderr.
    report_to = stderr if is_stdio(output) else stdout
    started = time.perf_counter()
    ray_stats: dict[str, Any] | None = None
    try:
        with _ctrl_c_raises():
            ray_stats = asyncio.run(
                _stream(args, settings, records, output, fmt, summary, progress)
            )
    except KeyboardInterrupt:
        progress.close()
        _print_kept(summary.count, resume.results, args, output, stderr, "interrupted")
        return 130
    except RunAborted as exc:
        progress.close()
        print(
            f"verifiers: error: stopped after {exc.count} identical errors in a row that no "
            f"retry can fix: {exc.message}",
            file=stderr,
        )
        if exc.hint:
            print(f"verifiers: fix: {exc.hint}", file=stderr)
        _print_kept(summary.count, resume.results, args, output, stderr, "after the fix")
        return 1
    finally:
        progress.close()
    wall = time.perf_counter() - started
    doc = summary.to_json(
        wall_s=wall,
        input=str(input_path),
        output=str(output),
        resumed={"already_done": resume.results, "truncated_bytes": resume.truncated_bytes},
        **({} if ray_stats is None else {"ray": ray_stats}),
    )
    bad = doc["error_kinds"].get("bad_input", 0)
    if doc["results"] and bad > BAD_INPUT_SHARE * doc["results"]:
        doc["hint"] = diagnose_input(input_path)
    if args.summary_json is not None:
        try:
            args.summary_json.write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            raise BadInput(f"cannot write {str(args.summary_json)!r}: {exc.strerror}") from None
    if not args.quiet:
        print_summary(doc, report_to)
        if ray_stats is not None:
            print(_ray_line(ray_stats), file=report_to)
    if "hint" in doc:
        print(
            f"verifiers: warning: {bad:,} of {doc['results']:,} lines are bad_input: {doc['hint']}",
            file=stderr,
        )
    return 0


def _print_kept(
    count: int,
    earlier: int,
    args: argparse.Namespace,
    output: Path,
    stderr: TextIO,
    when: str,
) -> None:
    """After an interrupt or an abort: what is kept, and the exact command that continues."""
    if is_stdio(output):
        print(
            f"verifiers: {count:,} results were written to standard output; to resume, "
            "score into a file (-o PATH)",
            file=stderr,
        )
        return
    kept = count + earlier
    print(
        f"verifiers: {kept:,} results kept in {str(output)!r}; {when}, continue with: "
        f"{_resume_command(args, output)}",
        file=stderr,
    )


class _CliLogHandler(logging.Handler):
    """Library warnings as ``verifiers: warning: ...`` lines on the CLI's stderr."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = "error" if record.levelno >= logging.ERROR else "warning"
            self.stream.write(f"verifiers: {level}: {record.getMessage()}\n")
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def _cli_logging(quiet: bool, stderr: TextIO) -> Iterator[None]:
    """Library warnings as one ``verifiers: warning:`` line each on stderr for this run;
    ``-q`` keeps errors only (per-item warnings: retries, budgets). The logger's state is put
    back afterwards, so ``main()`` called in process (tests, notebooks) leaves logging alone."""
    logger = logging.getLogger("verifiers")
    saved = (logger.level, logger.propagate)
    handler = _CliLogHandler(stderr)
    logger.addHandler(handler)
    logger.setLevel(logging.ERROR if quiet else logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_summary(doc: dict[str, Any], stream: TextIO) -> None:
    """The human summary table: statuses, per-verifier mean reward, latency, throughput."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream, highlight=False, soft_wrap=True)
    table = Table(title=f"scored {doc['results']:,} lines -> {doc['output']}", title_justify="left")
    table.add_column("verifier")
    table.add_column("count", justify="right")
    for status in ("pass", "fail", "error", "skipped"):
        table.add_column(status, justify="right")
    table.add_column("mean reward", justify="right")
    for name, stats in doc["verifiers"].items():
        table.add_row(
            name,
            f"{stats['count']:,}",
            *(f"{stats['status'].get(s, 0):,}" for s in ("pass", "fail", "error", "skipped")),
            _fmt(stats["mean_reward"], ".3f"),
        )
    status = doc["status"]
    table.add_row(
        "total",
        f"{doc['results']:,}",
        *(f"{status[s]:,}" for s in ("pass", "fail", "error", "skipped")),
        "",
        style="bold",
    )
    console.print(table)
    latency = doc["latency_s"]
    p50 = _fmt(None if latency["p50"] is None else latency["p50"] * 1000, ".2f")
    p95 = _fmt(None if latency["p95"] is None else latency["p95"] * 1000, ".2f")
    line = (
        f"latency p50 {p50} ms, p95 {p95} ms; {doc['wall_s']:.2f} s wall, "
        f"{_fmt(doc.get('throughput_per_s'), ',.0f')} lines/s"
    )
    if doc["cached"]:
        line += f"; {doc['cached']:,} from cache"
    if doc["error_kinds"]:
        kinds = ", ".join(f"{k} {v:,}" for k, v in doc["error_kinds"].items())
        line += f"; errors: {kinds}"
    resumed = doc.get("resumed") or {}
    if resumed.get("already_done"):
        line += f"; resumed after {resumed['already_done']:,} existing results"
    console.print(line)
    first = doc.get("first_errors") or []
    if first:
        more = status["error"] - len(first)
        console.print(
            f"first errors{f' (and {more:,} more in the output)' if more > 0 else ''}:",
            markup=False,
        )
        for err in first:
            where = f"line {err['line']}" if err.get("line") is not None else "line ?"
            ident = f" id {err['id']!r}" if err.get("id") is not None else ""
            message = " ".join(str(err["message"]).split())
            if len(message) > 200:
                message = message[:197] + "..."
            console.print(f"  {where}{ident}: {err['kind']}: {message}", markup=False)
