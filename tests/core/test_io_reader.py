"""The streaming reader/writer: every bad-input kind, bounded memory, Parquet, resume files."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from verifiers import BadInput, Result, Trajectory
from verifiers.io import (
    InputRecord,
    iter_records,
    open_result_writer,
    prepare_resume,
    read_results,
    skip_done,
)


def good(ident: str | int | None = "a", completion: str = "4") -> dict[str, object]:
    line: dict[str, object] = {
        "completion": completion,
        "task": {"verifier": "answer.exact", "reference": "4"},
    }
    if ident is not None:
        line["id"] = ident
    return line


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def records(path: Path, **kw: int) -> list[InputRecord]:
    return list(iter_records(path, **kw))  # type: ignore[arg-type]


def only_error(record: InputRecord) -> Result:
    assert isinstance(record.item, Result), record
    assert record.item.status == "error"
    assert record.item.error is not None and record.item.error.kind == "bad_input"
    assert record.item.error.line == record.line
    assert record.item.reward is None
    return record.item


def test_good_lines_parse_and_empty_lines_are_skipped(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "in.jsonl",
        [json.dumps(good("a")).encode(), b"", b"   \t", json.dumps(good(7)).encode()],
    )
    got = records(path)
    assert [r.line for r in got] == [1, 4]
    assert all(isinstance(r.item, Trajectory) for r in got)
    assert [r.key for r in got] == ["a", "7"]


@pytest.mark.parametrize(
    ("raw", "reason", "ident"),
    [
        (b'{"id": "t1", "completion": "4", "task": {"verif', "not valid JSON", "t1"),
        (b'{"id": "u1", "completion": "\xff\xfe"}', "not valid UTF-8", "u1"),
        (b"[1, 2, 3]", "not an object (got list)", None),
        (b'"just a string"', "not an object (got str)", None),
        (b"null", "not an object (got NoneType)", None),
        (b'{"id": "v1", "completion": 5, "task": {"verifier": "x"}}', "field 'completion'", "v1"),
        (b'{"id": "v2", "completion": "x"}', "field 'task': Field required", "v2"),
        (
            b'{"id": "v3", "completion": "x", "task": {"checks": [{"weight": "heavy"}]}}',
            "field 'task.checks.0.verifier'",
            "v3",
        ),
        (
            b'{"id": 9, "completion": "x", "task": {"verifier": "a", "checks": [{"verifier": "b"}]}}',
            "exactly one of 'verifier' or a non-empty 'checks'",
            "9",
        ),
        (b'{"completion": "x", "task": {"verifier": "a"}, "id": [1]}', "field 'id'", None),
        (b"{" * 100_000, "not valid JSON", None),
        (
            b'{"id": "s1", "completion": "\\ud800", "task": {"verifier": "x"}}',
            "not valid JSON",
            "s1",
        ),
        (
            b'{"id": "\\udfff", "completion": "x", "task": {"verifier": "x"}}',
            "not valid JSON",
            None,
        ),
    ],
)
def test_each_bad_line_becomes_one_error_with_reason(
    tmp_path: Path, raw: bytes, reason: str, ident: str | None
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [json.dumps(good("ok")).encode(), raw])
    got = records(path)
    assert len(got) == 2
    assert isinstance(got[0].item, Trajectory)
    error = only_error(got[1])
    assert error.error is not None
    assert reason in error.error.message
    assert error.id == ident
    assert len(error.error.message) < 300


def test_too_large_line_is_an_error_and_reading_continues(tmp_path: Path) -> None:
    big = json.dumps(good("big", "x" * 5000)).encode()
    path = write_lines(tmp_path / "in.jsonl", [big, json.dumps(good("after")).encode()])
    got = records(path, max_line_bytes=1000)
    error = only_error(got[0])
    assert error.id == "big"  # recovered from the line's start
    assert error.error is not None and "too large" in error.error.message
    assert isinstance(got[1].item, Trajectory) and got[1].item.id == "after"
    # a line exactly at the limit (newline excluded) is accepted
    exact = json.dumps(good("e")).encode()
    path = write_lines(tmp_path / "exact.jsonl", [exact])
    assert isinstance(records(path, max_line_bytes=len(exact))[0].item, Trajectory)


def test_fifty_megabyte_line_uses_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"id": "huge", "completion": "')
        chunk = b"y" * (1 << 20)
        for _ in range(50):
            handle.write(chunk)
        handle.write(b'", "task": {"verifier": "answer.exact"}}\n')
        handle.write(json.dumps(good("next")).encode() + b"\n")
    tracemalloc.start()
    try:
        got = records(path, max_line_bytes=4 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got) == 2
    error = only_error(got[0])
    assert error.id == "huge"
    assert error.error is not None and "52,428,8" in error.error.message  # the size is reported
    assert got[1].key == "next"
    assert peak < 16 * 1024 * 1024, peak  # never the whole 50 MB line


def test_default_cap_rejects_fifty_megabytes(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"id": "h", "completion": "' + b"z" * (50 << 20) + b'"}\n')
    (got,) = records(path)
    assert "limit of 33,554,432 bytes" in (only_error(got).error or pytest.fail()).message


def test_bom_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    body = json.dumps(good("a")).encode()
    path.write_bytes(b"\xef\xbb\xbf" + body + b"\r\n" + json.dumps(good("b")).encode())
    assert [r.key for r in records(path)] == ["a", "b"]
    assert all(isinstance(r.item, Trajectory) for r in records(path))


def test_empty_file_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert records(path) == []
    path.write_bytes(b"\n\n  \n")
    assert records(path) == []


def test_directory_and_missing_file_raise_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is a directory"):
        iter_records(tmp_path)
    with pytest.raises(BadInput, match="not found"):
        iter_records(tmp_path / "nope.jsonl")


def test_writer_round_trip_and_append(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    results = [
        Result.scored(1.0).model_copy(update={"id": "a"}),
        Result.failed("wrong", reward=0.25).model_copy(update={"id": "b"}),
        Result.errored("bad_input", "broken", line=3),
        Result.skip("n/a"),
    ]
    with open_result_writer(out) as writer:
        for result in results[:2]:
            writer.write(result)
    with open_result_writer(out, append=True) as writer:
        for result in results[2:]:
            writer.write(result)
    assert list(read_results(out)) == results


def test_writer_reports_unwritable_output(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        open_result_writer(tmp_path / "missing-dir" / "out.jsonl")
    with pytest.raises(BadInput, match="is a directory"):
        open_result_writer(tmp_path)


def test_prepare_resume_truncates_half_written_tail(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    lines = [
        Result.scored(1.0).model_copy(update={"id": "a"}).model_dump_json(),
        Result.scored(0.0).model_dump_json(),  # no id
        Result.scored(0.0).model_dump_json(),  # no id
        Result.scored(1.0).model_copy(update={"id": "a"}).model_dump_json(),  # repeated id
    ]
    whole = ("\n".join(lines) + "\n").encode()
    out.write_bytes(whole + b'{"id": "b", "reward": 1.0, "sta')
    state = prepare_resume(out)
    assert out.read_bytes() == whole
    assert state.truncated_bytes == len(b'{"id": "b", "reward": 1.0, "sta')
    assert state.results == 4
    assert state.done == {"a": 2, None: 2}
    inputs = [
        InputRecord(i + 1, Trajectory.model_validate(good(ident)))
        for i, ident in enumerate(["a", None, "a", None, None, "b", "a"])
    ]
    left = [r.line for r in skip_done(inputs, state)]
    assert left == [5, 6, 7]


def test_prepare_resume_missing_output_and_garbage(tmp_path: Path) -> None:
    assert prepare_resume(tmp_path / "new.jsonl").results == 0
    out = tmp_path / "out.jsonl"
    ok = Result.scored(1.0).model_dump_json()
    out.write_text(f"{ok}\nnot a result\n{ok}\n")
    with pytest.raises(BadInput, match="line 2 .* is not a result"):
        prepare_resume(out)
    out.write_text(f"{ok}\nnot a result either\n")  # complete garbage last line: a crash
    assert prepare_resume(out).results == 1
    assert out.read_text() == f"{ok}\n"
    with pytest.raises(BadInput, match="directory"):
        prepare_resume(tmp_path)


def test_parquet_in_and_out(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "id": ["p1", "p2", "p3"],
            "completion": ["4", "5", "4"],
            "task": [
                {"verifier": "answer.exact", "reference": "4"},
                {"verifier": "answer.exact", "reference": "4"},
                {"verifier": "answer.exact"},
            ],
            "metadata": [json.dumps({"step": 1}), json.dumps({"step": 2}), None],
        }
    )
    src = tmp_path / "in.parquet"
    frame.to_parquet(src)
    got = records(src)
    assert [r.key for r in got] == ["p1", "p2", "p3"]
    assert all(isinstance(r.item, Trajectory) for r in got)
    first = got[0].item
    assert isinstance(first, Trajectory) and first.metadata == {"step": 1}
    bad = pd.DataFrame({"id": ["q"], "completion": [3]})
    bad.to_parquet(tmp_path / "bad.parquet")
    only_error(records(tmp_path / "bad.parquet")[0])

    out = tmp_path / "out.parquet"
    results = [
        Result.scored(1.0, components={"x": 1.0}).model_copy(update={"id": "p1"}),
        Result.errored("infra", "down"),
    ]
    with open_result_writer(out, fmt="parquet") as writer:
        for result in results:
            writer.write(result)
    assert list(read_results(out)) == results
    assert pd.read_parquet(out)["status"].tolist() == ["pass", "error"]


def test_writer_never_loses_a_line_to_an_unserialisable_result(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    odd = Result.scored(1.0, details={"obj": object()}).model_copy(
        update={"id": "odd", "verifier": "v@1"}
    )
    lone = Result.failed("bad \ud800 text").model_copy(update={"id": "x\ud800"})
    with open_result_writer(out) as writer:
        writer.write(odd)
        writer.write(lone)
        writer.write(Result.scored(1.0).model_copy(update={"id": "ok"}))
    got = list(read_results(out))
    # The verdicts themselves, made writable (Result.json_safe), never an error in their place.
    assert [r.status for r in got] == ["pass", "fail", "pass"]
    assert got[0].id == "odd" and got[0].verifier == "v@1"
    assert str(got[0].details["obj"]).startswith("<object object")
    assert got[1].id == "x\\ud800" and got[1].feedback == "bad \\ud800 text"
