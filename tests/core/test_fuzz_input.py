"""Fuzzing the reader and ``verifiers score`` with hypothesis: truncated lines, wrong types,
unknown verifier names, invalid UTF-8, random bytes. Invariant: every non-empty input line gets
exactly one result, in order; broken ones are ``error``/``bad_input`` with their line number and
a reason; nothing crashes and nothing is lost."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifiers import Result, Trajectory
from verifiers.cli import main
from verifiers.io import iter_records

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
verifier_names = st.sampled_from(["answer.exact", "answer.numeric", "no.such", "", "answer"])


@st.composite
def valid_lines(draw: st.DrawFn) -> dict[str, Any]:
    line: dict[str, Any] = {
        "completion": draw(st.text(max_size=40)),
        "task": {"verifier": draw(verifier_names), "reference": draw(st.text(max_size=10))},
    }
    if draw(st.booleans()):
        line["id"] = draw(st.text(max_size=8) | st.integers())
    if draw(st.booleans()):
        line["metadata"] = draw(st.dictionaries(st.text(max_size=5), json_values, max_size=2))
    return line


@st.composite
def wrong_types(draw: st.DrawFn) -> dict[str, Any]:
    line = draw(valid_lines())
    field = draw(st.sampled_from(["completion", "task", "id", "prompt", "artifacts", "metadata"]))
    line[field] = draw(json_values)
    return line


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


@st.composite
def raw_lines(draw: st.DrawFn) -> bytes:
    kind = draw(
        st.sampled_from(
            ["valid", "wrong", "truncated", "bytes", "utf8", "json", "blank", "surrogate"]
        )
    )
    if kind == "valid":
        return encode(draw(valid_lines()))
    if kind == "wrong":
        return encode(draw(wrong_types()))
    if kind == "truncated":
        full = encode(draw(valid_lines()))
        return full[: draw(st.integers(min_value=0, max_value=len(full) - 1))]
    if kind == "bytes":
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    if kind == "utf8":
        full = encode(draw(valid_lines()))
        cut = draw(st.integers(min_value=0, max_value=len(full)))
        return (
            full[:cut]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + full[cut:]
        )
    if kind == "surrogate":  # "\\ud800" escapes: Python's json accepts them, UTF-8 cannot hold them
        line = draw(valid_lines())
        field = draw(st.sampled_from(["completion", "id", "reference"]))
        bad = draw(st.text(max_size=3)) + draw(st.sampled_from(["\ud800", "\udfff", "\udc80"]))
        if field == "reference":
            line["task"]["reference"] = bad
        else:
            line[field] = bad
        return json.dumps(line, ensure_ascii=True).encode()
    if kind == "json":
        return encode(draw(json_values))
    return draw(st.sampled_from([b"", b" ", b"\t", b"\r"]))


def expected_lines(lines: list[bytes]) -> list[int]:
    """1-based numbers of the lines that must produce a result (non-blank ones)."""
    numbers = []
    for i, raw in enumerate(lines):
        body = raw[3:] if i == 0 and raw.startswith(b"\xef\xbb\xbf") else raw
        if body.strip():
            numbers.append(i + 1)
    return numbers


def check_error(item: Result, line: int) -> None:
    assert item.status == "error" and item.reward is None
    assert item.error is not None and item.error.message.strip()
    if item.error.kind == "bad_input" and item.error.line is not None:
        assert item.error.line == line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(raw_lines(), max_size=12), final_newline=st.booleans())
def test_reader_gives_one_item_per_non_empty_line(lines: list[bytes], final_newline: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline and lines else b""))
        got = list(iter_records(path, max_line_bytes=150))
    assert [r.line for r in got] == expected_lines(lines)
    for record in got:
        if isinstance(record.item, Result):
            check_error(record.item, record.line)
            assert record.item.error is not None and record.item.error.kind == "bad_input"
            assert record.item.error.line == record.line
        else:
            assert isinstance(record.item, Trajectory)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(raw_lines(), max_size=10))
def test_cli_score_never_crashes_or_loses_lines(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.jsonl"
        out = Path(tmp) / "out.jsonl"
        src.write_bytes(b"\n".join(lines))
        code = main(
            ["score", str(src), "-o", str(out), "-q", "--no-cache", "--max-line-bytes", "150"]
        )
        assert code == 0
        text = out.read_text()
    numbers = expected_lines(lines)
    results = [Result.model_validate_json(line) for line in text.split("\n") if line]
    assert len(results) == len(numbers)
    for result, number in zip(results, numbers, strict=True):
        if result.status == "error":
            check_error(result, number)
            assert result.error is not None and result.error.line == number
        else:
            assert result.status in ("pass", "fail", "skipped")
            assert result.verifier.startswith(("answer.exact@", "answer.numeric@"))


def test_cli_on_empty_file_and_directory(tmp_path: Path) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_bytes(b"")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "-o", str(out), "-q", "--no-cache"]) == 0
    assert out.read_bytes() == b""
    assert main(["score", str(tmp_path), "-q", "--no-cache"]) == 1


# The console script's work, plus its own peak RSS (VmHWM is per address space, so unlike
# wait4's ru_maxrss it does not include the forked parent's memory).
PEAK_RSS_CLI = """
import sys
from verifiers.cli import main
code = main(sys.argv[1:])
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]) // 1024)
sys.exit(code)
"""


def test_cli_fifty_megabyte_line_in_bounded_memory(tmp_path: Path) -> None:
    """A 50 MB line (over the 32 MiB default cap) is one error; the process stays small."""
    import subprocess
    import sys

    src = tmp_path / "in.jsonl"
    good = {"completion": "4", "task": {"verifier": "answer.exact", "reference": "4"}}
    with src.open("wb") as handle:
        handle.write(json.dumps({"id": "before", **good}).encode() + b"\n")
        handle.write(b'{"id": "huge", "completion": "')
        for _ in range(50):
            handle.write(b"w" * (1 << 20))
        handle.write(b'"}\n')
        handle.write(json.dumps({"id": "after", **good}).encode() + b"\n")
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_CLI, "score", str(src), "-o", str(out), "-q", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = [Result.model_validate_json(line) for line in out.read_text().split("\n") if line]
    assert [r.id for r in results] == ["before", "huge", "after"]
    assert [r.status for r in results] == ["pass", "error", "pass"]
    error = results[1].error
    assert error is not None and error.kind == "bad_input" and error.line == 2
    assert "too large" in error.message
    peak_mb = int(proc.stdout.split()[-1])
    # baseline ~40 MB + at most the 32 MiB cap held once; 50 MB held twice would exceed it
    assert peak_mb < 110, f"peak RSS {peak_mb} MB: the line was held whole"
