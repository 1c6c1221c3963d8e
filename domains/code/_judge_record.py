"""The judge's result lines, defined once for the host and the in-sandbox judge (stdlib only).

The judge writes to the host lines ``<nonce> <kind> <json>``: ``R`` (ready: written before any
candidate code runs), ``T`` (one test's record) and ``D`` (done). Only lines that carry the
job's nonce count, and nothing after the first ``D``. The tables below name every key each line
may carry and the JSON types its value may have; the judge writes them (:func:`line`) and the
host reads them back through :func:`parse`, which checks every line against its table.

Who can shape a record: the judge alone writes the lines (the candidate never sees the nonce),
but the text in a record (messages, tracebacks, output, for compiled languages the harness's
answer) is the candidate's. A record that breaks its table is therefore never trusted and
never a crash: a malformed ``T`` becomes a failed (``error``) record of its test, a malformed
``D`` reads as a judge that did not finish (no test counts: the model's 0, as when the
candidate kills its judge), and a malformed ``R`` as a judge that never started (before any
candidate code: the machine's failure).

Adding a key: add it to its table here, write it in the judge, read it in the test kind
(``_kinds``) that needs it.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DONE",
    "DONE_FIELDS",
    "JUDGE_FILE",
    "JUDGE_MODULES",
    "READY",
    "READY_FIELDS",
    "TEST",
    "TEST_FIELDS",
    "TEST_STATUSES",
    "check",
    "line",
    "parse",
]

READY, TEST, DONE = "R", "T", "D"
"""The line kinds."""

JUDGE_MODULES = ("_judge_codec", "_judge_record", "_judge_candidate", "_judge_starvation", "_judge")
"""The judge's modules in load order (each imports only those before it); ``_judge`` runs as
``__main__``. ``_judge_boot`` ships and loads them."""
JUDGE_FILE = ".judge/harness.py"
"""The file name every judge module is compiled under: its frames in a traceback, which the
model's feedback leaves out where it can. (One name, as when the judge was one file: where
feedback does show a judge frame, a pytest collection error, it reads as it did.)"""

_JSON = (str, int, float, bool, list, dict, type(None))
_TEXT = (str,)
_NUMBER = (int, float)

READY_FIELDS: dict[str, tuple[type, ...]] = {
    "dumpable_off": (bool,),  # the judge made itself non-dumpable
    "python": _TEXT,  # the sandbox interpreter's version
}
TEST_FIELDS: dict[str, tuple[type, ...]] = {
    "name": _TEXT,  # the test's name (assert, pytest: the key; call, io: for feedback)
    "index": (int,),  # call and io: the case's position in the spec (the key)
    "status": _TEXT,  # one of TEST_STATUSES
    "exc_type": _JSON,  # the exception's type name (as the candidate reported it)
    "message": _TEXT,
    "tb": _TEXT,  # traceback tail
    "stdout": _TEXT,
    "stderr": _TEXT,
    "stdout_truncated": (bool,),  # io: the program wrote more than output_bytes
    "returncode": (int, type(None)),  # io: the program's exit status
    "duration_s": _NUMBER,
    "value": _JSON,  # call: the returned value, tagged JSON (``_judge_codec``)
    "opaque": _TEXT,  # call: repr of a returned object that is not plain data
    "last_call": (dict,),  # {"target", "args", "result"} of the call before a failure
    "phase": _TEXT,  # pytest: setup, call or teardown
    "forged": (bool,),  # compiled call: a harness record written out of turn
}
TEST_STATUSES = frozenset(
    {"passed", "failed", "error", "timeout", "skipped", "missing", "returned", "raised", "ran"}
)
"""``returned``/``raised`` (call) and ``ran`` (io) are judged on the host; the others are
verdicts of the judge."""
DONE_FIELDS: dict[str, tuple[type, ...]] = {
    "spec_error": _TEXT,  # the task's own code is broken (bad_input)
    "infra_error": _TEXT,  # the runtime is broken (infra)
    "compile": (dict,),  # {"status", "returncode", "output", "duration_s"}: did not build
    "built": (bool,),  # compiled build phase: the program is built
    "build_s": (int, float, type(None)),
    "collected": (list,),  # pytest: the test ids collected
    "exit_code": (int,),  # pytest's exit status
    "collect_errors": (list,),
    # A build or test still starved of CPU by the machine at STARVE_GRACE times its limit:
    # the runner's evidence (``_judge_starvation``); the host abstains (engine, infra).
    "starved": (dict,),
    # The judge ended the run at once on such a step (``Judge.abandon``): the records so far
    # are not all of it, and the host abstains on ``starved`` without reading them.
    "abandoned": (bool,),
    # CPU seconds (``os.times``) of the judge's phases, for benchmarks/humaneval.py --phases:
    # {"boot_start", "judge_start", "judge", "children"}; no verdict reads it.
    "usage": (dict,),
}
_FIELDS = {READY: READY_FIELDS, TEST: TEST_FIELDS, DONE: DONE_FIELDS}


def line(nonce: str, kind: str, payload: dict[str, Any]) -> bytes:
    """One result line as the judge writes it (raises ValueError on a non-finite float)."""
    text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    return f"{nonce} {kind} {text}\n".encode()


def check(kind: str, payload: dict[str, Any]) -> str | None:
    """What is wrong with a line's payload against its table, or None when nothing is."""
    fields = _FIELDS[kind]
    for key, value in payload.items():
        allowed = fields.get(key)
        if allowed is None:
            return f"unknown key {key[:40]!r}"
        # bool is an int to isinstance; a True index or exit code is as malformed as "3".
        if type(value) not in allowed:
            return f"{key} is a {type(value).__name__}"
    if kind == TEST:
        if payload.get("status") not in TEST_STATUSES:
            return f"status {str(payload.get('status'))[:40]!r}"
        if "name" not in payload and "index" not in payload:
            return "neither name nor index"
    return None


def parse(
    stdout: bytes, nonce: str
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict[str, Any] | None]:
    """The nonce-signed lines of the judge's output: ready, test records, done.

    Other lines are ignored, and so is everything after the first ``D``; every line is
    checked against its table (see the module docstring for what a malformed one becomes).
    """
    ready: dict[str, Any] | None = None
    done: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    started = finished = False
    prefix = nonce.encode() + b" "
    for raw in stdout.split(b"\n"):
        if not raw.startswith(prefix) or len(raw) < len(prefix) + 2:
            continue
        kind = raw[len(prefix) : len(prefix) + 1]
        try:
            payload = json.loads(raw[len(prefix) + 2 :])
        except (ValueError, RecursionError):
            continue
        if not isinstance(payload, dict) or finished:
            continue
        if kind == b"R" and not started:
            started = True
            ready = payload if check(READY, payload) is None else None
        elif kind == b"T" and ready is not None:
            problem = check(TEST, payload)
            records.append(payload if problem is None else _malformed(payload, problem))
        elif kind == b"D" and ready is not None:
            finished = True
            done = payload if check(DONE, payload) is None else None
    return ready, records, done


def _malformed(payload: dict[str, Any], problem: str) -> dict[str, Any]:
    """The failed record that stands for a test record that breaks its table."""
    rec: dict[str, Any] = {
        "status": "error",
        "message": f"the judge's record of this test was malformed ({problem}); counts as failed",
    }
    for key in ("name", "index"):
        if type(payload.get(key)) in TEST_FIELDS[key]:
            rec[key] = payload[key]
    if not rec.keys() & {"name", "index"}:
        rec["name"] = "?"
    return rec
