"""The test kinds of ``code.tests``, host side: one class per kind, all in :data:`KINDS`.

A test kind is everything the host knows about one way of testing code: the ``tests`` entry of
the judge's job (what the sandbox may see: never an expected value of ``call`` or ``io``), how
many tests the task promises before anything runs, and how the judge's records
(``_judge_record``) become outcomes, compared here in the trusted process (``_compare``). Its
``run`` names the judge function that runs it in the sandbox (``_judge.RUNS``). ``CodeTests``
(``_verifier``) holds what every kind shares: the sandbox session, the two execs of a compiled
language, the verdict, the feedback.

Adding a kind: a spec model in ``_spec``, a class here registered in :data:`KINDS`, and one
``Judge.run_<name>`` in ``_judge`` listed in its ``RUNS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from verifiers.errors import BadInput

from . import _callgen, _judge_codec, _judge_record
from ._compare import Opaque, compare_output, short_diff, short_repr, values_equal
from ._languages import Language, Toolchain
from ._spec import AssertTests, CallTests, CodeTestsSpec, IoTests, PytestTests

__all__ = ["KINDS", "Outcome", "TestKind", "kind_for"]

Record = dict[str, Any]
"""One ``T`` line of the judge (keys and types: ``_judge_record.TEST_FIELDS``)."""


@dataclass
class Outcome:
    """One test's verdict, as the feedback and ``details["tests"]`` show it."""

    name: str
    passed: bool
    status: str
    summary: str = ""
    detail: str = ""
    record: Record = field(default_factory=dict)


class TestKind:
    """How one kind of tests is run and judged, host side (subclass per kind)."""

    __test__ = False  # not a pytest class, whatever its name

    kind: ClassVar[str]
    """The spec's ``tests.kind``."""
    run: ClassVar[str]
    """The judge function that runs it (``_judge.RUNS``), sent as the job's ``run``."""
    compiled: ClassVar[bool | None] = None
    """For compiled languages only (True), Python only (False), or both (None)."""

    def payload(self, tests: Any) -> dict[str, Any]:
        """The job's ``tests`` entry: what the judge needs, and nothing the candidate must not
        learn."""
        raise NotImplementedError

    def expected(self, tests: Any) -> int:
        """Tests the task promises, known before anything runs (0: as many as are found)."""
        return 1

    def cases(self, tests: Any) -> int:
        """How many records the judge sends back (sizes the sandbox's output cap)."""
        return 1

    def output_per_case(self, spec: CodeTestsSpec) -> int:
        """Bytes one record may need: only ``io`` sends a whole stdout back."""
        return 8192

    def outcomes(self, tests: Any, records: list[Record], done: Record | None) -> list[Outcome]:
        """The records as outcomes, one per expected test (a missing one counts as failed)."""
        raise NotImplementedError

    def check_done(self, tests: Any, done: Record | None) -> None:
        """Raise BadInput when the finished run shows the task itself is broken."""

    def settle(
        self, tests: Any, done: Record | None, passed: int, expected: int
    ) -> tuple[int, str]:
        """Tests passed once the whole run is seen, and why when that lowers the count."""
        return passed, ""

    def program(
        self, tests: Any, lang: Language, chain: Toolchain, source: str
    ) -> tuple[dict[str, str | bytes], tuple[tuple[str, ...], ...], tuple[str, ...]]:
        """A compiled language's extra files, compile steps and run command for this kind.

        Raises:
            BadInput: the spec asks for what this language's harness cannot do.
        """
        raise BadInput(f"language {lang.name!r} does not support test kind {self.kind!r}")


class AssertKind(TestKind):
    """HumanEval style: the task's test code calls ``check(entry_point)``; one test."""

    kind = run = "assert"
    compiled = False

    def payload(self, tests: AssertTests) -> dict[str, Any]:
        return {
            "kind": "assert",
            "code": tests.code,
            "entry_point": tests.entry_point,
            "prelude": tests.prelude,
        }

    def outcomes(
        self, tests: AssertTests, records: list[Record], done: Record | None
    ) -> list[Outcome]:
        rec = (
            records[0] if records else {"name": f"check({tests.entry_point})", "status": "missing"}
        )
        return [judged(rec)]


class _Cases(TestKind):
    """Kinds with a list of cases, each judged here from its record (matched by index)."""

    _SEP: ClassVar[str]
    """Between a case's description and what happened to it, in the summary."""

    def expected(self, tests: Any) -> int:
        return len(tests.cases)

    def cases(self, tests: Any) -> int:
        return len(tests.cases)

    def outcomes(self, tests: Any, records: list[Record], done: Record | None) -> list[Outcome]:
        by_index = {r.get("index"): r for r in records}
        out = []
        for i, case in enumerate(tests.cases):
            name = case.name or f"case {i}"
            where = self.where(tests, case)
            rec = by_index.get(i)
            if rec is None:
                out.append(
                    Outcome(
                        name, False, "missing", f"{where}{self._SEP}did not run (counts as failed)"
                    )
                )
            else:
                out.append(self.case_outcome(tests, case, name, where, rec))
        return out

    def where(self, tests: Any, case: Any) -> str:
        """The case as the feedback names it."""
        raise NotImplementedError

    def case_outcome(self, tests: Any, case: Any, name: str, where: str, rec: Record) -> Outcome:
        """The case's verdict from its record."""
        raise NotImplementedError


class CallKind(_Cases):
    """Call the entry point with each case's arguments in the candidate process (Python); the
    returned values come back encoded and are compared here with the expected ones."""

    kind = run = "call"
    compiled = False
    _SEP = " "

    def payload(self, tests: CallTests) -> dict[str, Any]:
        # Only the inputs go to the sandbox; expected values stay on the host.
        def kwargs(case: Any) -> Any:
            if tests.values == "json":
                return _judge_codec.encode(dict(case.kwargs))
            return {"$": "dict", "v": [[k, v] for k, v in case.kwargs.items()]}

        return {
            "kind": "call",
            "entry_point": tests.entry_point,
            "cases": [
                {
                    "name": c.name,
                    "args": _judge_codec.encode(list(c.args))
                    if tests.values == "json"
                    else list(c.args),
                    "kwargs": kwargs(c),
                }
                for c in tests.cases
            ],
        }

    def where(self, tests: CallTests, case: Any) -> str:
        shown = [short_repr(a, 80) for a in case.args]
        shown += [f"{k}={short_repr(v, 80)}" for k, v in case.kwargs.items()]
        return f"{tests.entry_point}({', '.join(shown)})"

    def case_outcome(
        self, tests: CallTests, case: Any, name: str, where: str, rec: Record
    ) -> Outcome:
        status = str(rec.get("status"))
        if status == "returned":
            return self._returned(tests, case, name, where, rec)
        if status == "raised" and case.raises and rec.get("exc_type") == case.raises:
            return Outcome(name, True, "passed", "passed", "", rec)
        verb = {"raised": "raised", "timeout": "timed out", "error": "failed"}.get(status, status)
        want = (
            f"should raise {case.raises}"
            if case.raises
            else f"expected {short_repr(case.expected)}"
        )
        return Outcome(
            name, False, status, f"{where} {verb} ({want})", _exc_text(rec) + _streams(rec), rec
        )

    def _returned(self, tests: CallTests, case: Any, name: str, where: str, rec: Record) -> Outcome:
        try:
            actual = _judge_codec.decode(
                rec.get("value"), lambda d: Opaque(str(d.get("type", "?")), str(d.get("repr", "")))
            )
        except _judge_codec.CodecError:
            actual = Opaque("?", "undecodable")
        if rec.get("opaque"):
            actual = Opaque("object", str(rec["opaque"]))
        if case.raises:
            return Outcome(
                name,
                False,
                "failed",
                f"{where} returned {short_repr(actual)} but should raise {case.raises}",
                _streams(rec),
                rec,
            )
        expected = case.expected if tests.values == "json" else _judge_codec.decode(case.expected)
        tolerance_set = bool({"rel_tol", "abs_tol"} & tests.model_fields_set)
        if values_equal(
            actual,
            expected,
            rel_tol=tests.rel_tol,
            abs_tol=tests.abs_tol,
            int_tolerance=tolerance_set,
        ):
            return Outcome(name, True, "passed", "passed", "", rec)
        detail = ""
        if (
            isinstance(actual, str)
            and isinstance(case.expected, str)
            and "\n" in actual + case.expected
        ):
            detail = short_diff(actual, case.expected)
        if isinstance(actual, Opaque):
            detail = "return values must be plain data (numbers, strings, lists, dicts ...); custom objects never compare equal"
        return Outcome(
            name,
            False,
            "failed",
            f"{where} returned {short_repr(actual)}, expected {short_repr(case.expected)}",
            detail + _streams(rec),
            rec,
        )


class ProgramCallKind(CallKind):
    """``call`` in a compiled or scripted language: the host generates a harness that calls the
    entry point with typed literals (``_callgen``); the judge runs it once per case."""

    run = "program_call"
    compiled = True

    def program(
        self, tests: CallTests, lang: Language, chain: Toolchain, source: str
    ) -> tuple[dict[str, str | bytes], tuple[tuple[str, ...], ...], tuple[str, ...]]:
        if tests.values != "json" or any(c.kwargs for c in tests.cases):
            raise BadInput(
                f"code.tests call in {lang.name}: arguments are positional plain JSON (no kwargs, values='json')"
            )
        if any(c.raises for c in tests.cases) and lang.name not in _callgen.RAISES:
            raise BadInput(
                f"code.tests call in {lang.name}: 'raises' cases need a language with "
                f"exceptions ({', '.join(sorted(_callgen.RAISES))}, python); expect a value"
            )
        params = None
        if tests.signature is not None:
            params = [_callgen.parse_type(t) for t in tests.signature.params]
        harness = _callgen.harness_source(
            lang.name, tests.entry_point, [list(c.args) for c in tests.cases], params
        )
        return {chain.harness_file: harness}, chain.call_compile, chain.call_run


_SOURCE_LINE = re.compile(r"(\bsolution\.\w+|\b[A-Z]\w*\.java)[:(]\d+")
r"""Starts only at a word boundary: without ``\b`` every position of a long word run in the
candidate's stderr restarted ``\w*`` (a 40,000-letter line took 9 s, quadratic, in the host)."""


class IoKind(_Cases):
    """Run the program once per case on its stdin; its stdout comes back whole and is compared
    here with the expected output."""

    kind = run = "io"
    _SEP = ": "

    def payload(self, tests: IoTests) -> dict[str, Any]:
        return {"kind": "io", "cases": [{"name": c.name, "stdin": c.stdin} for c in tests.cases]}

    def output_per_case(self, spec: CodeTestsSpec) -> int:
        return spec.output_bytes

    def program(
        self, tests: IoTests, lang: Language, chain: Toolchain, source: str
    ) -> tuple[dict[str, str | bytes], tuple[tuple[str, ...], ...], tuple[str, ...]]:
        return {}, chain.io_compile, chain.io_run

    def where(self, tests: IoTests, case: Any) -> str:
        return f"input {short_repr(case.stdin, 120)}"

    def case_outcome(
        self, tests: IoTests, case: Any, name: str, where: str, rec: Record
    ) -> Outcome:
        status = str(rec.get("status"))
        out = str(rec.get("stdout") or "")
        err = str(rec.get("stderr") or "")
        err_lines = err.splitlines()
        # A stack trace names the candidate's line near its top (node, Java, Go): keep that
        # line with the tail.
        located = [ln for ln in err_lines[:-6] if _SOURCE_LINE.search(ln)][:2]
        err_tail = "\n".join(located + err_lines[-6:])
        if status == "timeout":
            return Outcome(name, False, "timeout", f"{where}: timed out", err_tail, rec)
        if rec.get("stdout_truncated"):
            return Outcome(name, False, "failed", f"{where}: output too long (truncated)", "", rec)
        if rec.get("returncode") != 0:
            return Outcome(
                name,
                False,
                "error",
                f"{where}: exited with status {rec.get('returncode')}",
                err_tail,
                rec,
            )
        if compare_output(
            out, case.stdout, tests.compare, rel_tol=tests.rel_tol, abs_tol=tests.abs_tol
        ):
            return Outcome(name, True, "passed", "passed", "", rec)
        return Outcome(
            name,
            False,
            "failed",
            f"{where}: expected {short_repr(case.stdout, 120)}, got {short_repr(out, 120)} (compare={tests.compare})",
            short_diff(out, case.stdout),
            rec,
        )


class PytestKind(TestKind):
    """The task's pytest files against the candidate's module; the tests are the ones listed
    in ``expected_tests``, else as many as pytest collects."""

    kind = run = "pytest"
    compiled = False

    def payload(self, tests: PytestTests) -> dict[str, Any]:
        return {"kind": "pytest", "files": dict(tests.files), "module": tests.module}

    def expected(self, tests: PytestTests) -> int:
        if isinstance(tests.expected_tests, list):
            return len(tests.expected_tests)
        if isinstance(tests.expected_tests, int):
            return tests.expected_tests
        return 0

    def outcomes(
        self, tests: PytestTests, records: list[Record], done: Record | None
    ) -> list[Outcome]:
        by_name: dict[str, Record] = {}
        for r in records:
            by_name.setdefault(str(r.get("name")), r)
        if isinstance(tests.expected_tests, list):
            ids = list(tests.expected_tests)
        else:
            collected = done.get("collected") if done else None
            ids = [str(x) for x in collected] if isinstance(collected, list) else list(by_name)
        outs = [judged(by_name.get(i, {"name": i, "status": "missing"})) for i in ids]
        if isinstance(tests.expected_tests, int) and tests.expected_tests > len(outs):
            outs += [
                Outcome(f"expected test #{k + 1}", False, "missing", "was not collected")
                for k in range(len(outs), tests.expected_tests)
            ]
        return outs

    def check_done(self, tests: PytestTests, done: Record | None) -> None:
        if done is not None and not done.get("collected") and tests.expected_tests is None:
            raise BadInput("code.tests spec: the pytest files define no tests")

    def settle(
        self, tests: PytestTests, done: Record | None, passed: int, expected: int
    ) -> tuple[int, str]:
        if done is not None and expected and passed == expected and done.get("exit_code") != 0:
            return (
                expected - 1,
                f"pytest exited with status {done.get('exit_code')}; not full credit.",
            )
        return passed, ""


KINDS: dict[str, TestKind] = {
    k.run: k for k in (AssertKind(), CallKind(), ProgramCallKind(), IoKind(), PytestKind())
}
"""Every test kind, by the judge function that runs it."""


def kind_for(tests: Any, lang: Language) -> TestKind:
    """The test kind that runs ``tests`` in ``lang``.

    Raises:
        BadInput: the language does not support this kind of tests.
    """
    compiled = lang.toolchain is not None
    if tests.kind in lang.kinds:
        for kind in KINDS.values():
            if kind.kind == tests.kind and kind.compiled in (None, compiled):
                return kind
    raise BadInput(f"language {lang.name!r} does not support test kind {tests.kind!r}")


# -- records shared by the kinds ---------------------------------------------------------------


def judged(rec: Record) -> Outcome:
    """The outcome of a test the judge decided itself (assert, pytest)."""
    status = str(rec.get("status", "missing"))
    name = str(rec.get("name", "?"))
    passed = status == "passed"
    summary = {
        "passed": "passed",
        "failed": "failed",
        "error": "raised an error",
        "timeout": "timed out",
        "skipped": "was skipped (counts as failed)",
        "missing": "did not run (counts as failed)",
    }.get(status, status)
    detail = "" if passed else _exc_text(rec) + _last_call(rec) + _streams(rec)
    return Outcome(name, passed, status, summary, detail, rec)


def _exc_text(rec: Record) -> str:
    parts = []
    if rec.get("exc_type"):
        parts.append(f"{rec['exc_type']}: {rec.get('message', '')}".strip().rstrip(":"))
    elif rec.get("message"):
        parts.append(str(rec["message"]))
    tb = str(rec.get("tb") or "")
    if tb:
        # The judge's own frames say nothing about the model's code.
        lines = [
            ln
            for ln in tb.splitlines()
            if _judge_record.JUDGE_FILE not in ln and "in _candidate_main" not in ln
        ]
        parts.append("\n".join(lines[-6:]))
    return "\n".join(parts)


def _last_call(rec: Record) -> str:
    last = rec.get("last_call")
    if not isinstance(last, dict):
        return ""
    args = str(last.get("args") or "[]")
    args = args[1:-1] if args.startswith("[") and args.endswith("]") else args
    result = last.get("result")
    outcome = f"returned {result}" if result is not None else "raised"
    return f"\nlast call before the failure: {last.get('target')}({args}) {outcome}"


def _streams(rec: Record) -> str:
    out = str(rec.get("stdout") or "")
    return f"\nstdout: {short_repr(out, 300)}" if out else ""
