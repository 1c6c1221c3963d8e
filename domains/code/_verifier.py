"""``code.tests``: run model-written code against tests in the sandbox; reward = share passed.

The host builds a job (test code, inputs, a fresh random nonce), hands it to the judge in the
sandbox on stdin, and reads back only the nonce-signed lines the judge writes
(``_judge_record``). Expected values of ``io`` and ``call`` tests stay here and are compared
here. What differs between test kinds (the job's tests, the expected count, records to
outcomes) is one class per kind in ``_kinds``; this module holds what they share: the sandbox
session, the two execs of a compiled language, the verdict and the feedback. See ``_judge`` and
``_judge_candidate`` for why the candidate cannot forge the judge's lines, and ``docs/code.md``
for the threat model.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, ClassVar

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, InvalidOutput
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import _fenced_blocks, completion_text, last_code_block
from verifiers.types import Result, Trajectory

from . import _callgen, _judge_record
from ._compare import printable
from ._judge_boot import preload_source
from ._kinds import Outcome, TestKind, kind_for
from ._languages import BUILD_DIR, BUILD_MEMORY_MB, Language, judge_files, language_for
from ._spec import CodeTestsSpec

__all__ = ["CodeTests", "extract_code"]

JUDGE_MEMORY_MB = 192
"""Memory added to the sandbox for the judge process (pytest and the interpreter)."""
STARTUP_GRACE_S = 5.0
"""Seconds the sandbox allows past ``timeout_s`` for interpreter and pytest start-up."""


def extract_code(text: str, language: Language, mode: str = "last_block") -> str:
    """The code to run: the last fenced block (tagged ``language`` or untagged), else all.

    A block tagged with the language's name or any alias (``cpp``, ``c++``, ``cc`` ...) wins
    over untagged ones; a block tagged for another language is taken only when there is
    nothing else (it then fails to build, as the model's own mistake).
    """
    if mode == "whole":
        return text
    if language.toolchain is not None:
        tags = {language.name, *language.aliases}
        blocks = _fenced_blocks(text)
        tagged = [body for tag, body in blocks if tag in tags]
        untagged = [body for tag, body in blocks if not tag]
        for chosen in (tagged, untagged, [body for _, body in blocks]):
            if chosen:
                return chosen[-1]
        found = last_code_block(text, language.name)
        return text if found is None else found
    block = last_code_block(text, language.name)
    if block is None:
        for alias in language.aliases:
            block = last_code_block(text, alias)
            if block is not None:
                break
    return text if block is None else block


@register("code.tests")
class CodeTests(Verifier[CodeTestsSpec]):
    """Share of tests passed by the model's code, judged in the sandbox so it cannot cheat."""

    version: ClassVar[str] = "1"
    Spec = CodeTestsSpec

    def budget_s(self, spec: CodeTestsSpec) -> float:
        """The sandbox time a sample is promised: ``timeout_s`` plus start-up grace."""
        return spec.timeout_s + _compile_allowance(spec) + STARTUP_GRACE_S

    async def verify(
        self, trajectory: Trajectory, spec: CodeTestsSpec, ctx: VerifierContext
    ) -> Result:
        lang = language_for(spec.language)
        tests = spec.tests
        kind = kind_for(tests, lang)
        code = extract_code(completion_text(trajectory), lang, spec.extract)
        expected_n = kind.expected(tests)
        if printable(code) != code:
            # Lone surrogates (U+D800..U+DFFF) have no UTF-8 form: not a program anything can
            # run, and the model's failure, never an unwritable result or an abstain.
            return Result.failed(
                "The code contains unpaired surrogate code points (U+D800..U+DFFF), which no "
                "source file can hold; it cannot run. Emit valid Unicode text.",
                components={"tests_passed": 0.0},
                details={"passed": 0, "expected": expected_n, "kind": tests.kind},
            )
        if not code.strip():
            return Result.failed(
                "No code found in the completion.",
                components={"tests_passed": 0.0},
                details={"passed": 0, "expected": expected_n, "kind": tests.kind},
            )
        nonce = secrets.token_hex(16)
        job = _job(spec, kind, lang, nonce)
        files: dict[str, str | bytes] = {lang.source_file: code}
        memory_mb = spec.memory_mb + JUDGE_MEMORY_MB
        if lang.toolchain is not None:
            program, files = _program(spec, lang, code)
            job["program"] = program
            job["code_path"] = next(iter(files))
            memory_mb += BUILD_MEMORY_MB
        budget = spec.timeout_s + _compile_allowance(spec) + STARTUP_GRACE_S
        remaining = ctx.remaining()
        exec_timeout = min(budget, remaining) if remaining > 0 else budget
        per_case = kind.output_per_case(spec)
        n_cases = kind.cases(tests)
        sandbox_output = min(256 << 20, max(1 << 20, (per_case + 4096) * (n_cases + 2)))
        async with ctx.sandbox(
            lang.image,
            timeout_s=exec_timeout,
            memory_mb=memory_mb,
            output_bytes=sandbox_output,
            pids=lang.pids,
        ) as sb:
            # One write: the candidate's file, then the judge's files (after and over anything
            # named like them), all read-only, so the job can change neither the judge nor the
            # program the io cases run. The sandbox sends it in the exec's frame (one round
            # trip per sample) and the constant judge files only once per runner.
            judge = judge_files(lang)
            await sb.write_files({**files, **judge}, readonly=True)
            # The judge's modules, loaded once per runner in a warm zygote that every judge
            # of that runner is forked from (``_judge_boot``: same judge, cheaper start).
            preload = preload_source(judge[".judge/harness.bin"])
            built: dict[str, Any] | None = None
            if lang.toolchain is not None:
                # Two execs in one session (one work dir): the build, under its own deadline
                # (compile_timeout_s), then the tests under theirs (timeout_s). One exec with
                # the sum of both let a program that stops its judge (SIGSTOP to the parent)
                # hold its sandbox for the compile allowance too (77 s, not 17 s, per sample).
                # No candidate code runs in the build exec (compilers only).
                build_timeout = spec.compile_timeout_s + STARTUP_GRACE_S
                res = await sb.exec(
                    list(lang.judge_argv),
                    preload=preload,
                    stdin=json.dumps(
                        {
                            **job,
                            "phase": "build",
                            "exec_timeout_s": min(build_timeout, exec_timeout),
                        }
                    ).encode(),
                    timeout=min(build_timeout, exec_timeout),
                )
                ready, _, built = _judge_record.parse(res.stdout, nonce)
                if ready is not None and built is not None and built.get("built"):
                    nonce = secrets.token_hex(16)
                    left = ctx.remaining()
                    run_timeout = spec.timeout_s + STARTUP_GRACE_S
                    run_timeout = min(run_timeout, left) if left > 0 else run_timeout
                    res = await sb.exec(
                        list(lang.judge_argv),
                        preload=preload,
                        stdin=json.dumps(
                            {**job, "nonce": nonce, "phase": "run", "exec_timeout_s": run_timeout}
                        ).encode(),
                        timeout=run_timeout,
                    )
                else:
                    built = None
            else:
                res = await sb.exec(
                    list(lang.judge_argv),
                    preload=preload,
                    # The exec's limit in the job too: the judge stops extending a starved
                    # step before the runner's kill would turn it into a 0 (``exec_end``).
                    stdin=json.dumps({**job, "exec_timeout_s": exec_timeout}).encode(),
                    timeout=exec_timeout,
                )
        ready, records, done = _judge_record.parse(res.stdout, nonce)
        if built is not None and done is not None and "build_s" in built:
            done = {**done, "build_s": built["build_s"]}
        if ready is None and res.oom_killed:
            # The judge prints its ready line before any candidate code runs, so a missing one
            # normally means the judge never started (the machine's failure). But when the
            # candidate's memory (tmpfs files, shared memory) took the whole runner down, the
            # runner's output is lost with it and the sandbox reports ``oom_killed``: that loss
            # is the candidate's doing (see docs/sandbox.md "Runner lost mid-job").
            raise InvalidOutput(
                f"the program ran out of memory (memory_mb={spec.memory_mb}) and took its "
                "sandbox down; no test result survived"
            )
        if ready is None:
            stderr = res.text("stderr")[-500:]
            raise InfraError(
                f"the code judge did not start in the sandbox (exit {res.returncode}, "
                f"timed_out={res.timed_out}): {stderr}"
            )
        if done is not None and done.get("abandoned") and isinstance(done.get("starved"), dict):
            # The judge ended the run on a step the machine starved through its grace: no
            # score stands on it (the engine abstains on ``starved_step``).
            starved = Result.failed(
                "A test step was starved of CPU by machine load through its grace; the run "
                "was ended there and is not scored.",
                components={"tests_passed": 0.0},
                details={
                    "kind": tests.kind,
                    "language": lang.name,
                    "passed": 0,
                    "expected": expected_n,
                    "finished": False,
                    "judge": ready,
                },
            )
            return _with_starvation(starved, done)
        if done is not None and done.get("spec_error"):
            raise BadInput(printable(f"code.tests spec: {done['spec_error']}"))
        if done is not None and done.get("infra_error"):
            raise InfraError(printable(f"code judge: {done['infra_error']}"))
        if done is not None and isinstance(done.get("compile"), dict):
            failed = _compile_failed(spec, lang, done["compile"], expected_n, tests.kind, ready)
            return _with_starvation(failed, done)
        kind.check_done(tests, done)
        outcomes = kind.outcomes(tests, records, done)
        expected_n = max(expected_n, len(outcomes)) if expected_n else len(outcomes)
        passed = sum(1 for o in outcomes if o.passed)
        notes: list[str] = []
        if done is None:
            # The judge never finished: the program killed, stopped or starved it. Nothing it
            # reported counts, because the candidate may have interfered with it.
            why = "ran out of time" if res.timed_out else "was killed"
            if res.oom_killed:
                why = "ran out of memory"
            notes.append(
                f"The test run {why} before it finished (total limit {spec.timeout_s:g}s, "
                f"{spec.memory_mb} MB); no test counts."
            )
            passed = 0
        else:
            passed, note = kind.settle(tests, done, passed, expected_n)
            if note:
                notes.append(note)
        fraction = passed / expected_n if expected_n else 0.0
        reward = (
            fraction
            if spec.partial_credit
            else (1.0 if passed == expected_n and expected_n else 0.0)
        )
        feedback = _feedback(spec, outcomes, passed, expected_n, notes)
        details: dict[str, Any] = {
            "kind": tests.kind,
            "language": lang.name,
            "passed": passed,
            "expected": expected_n,
            "tests": [_brief(o) for o in outcomes[:50]],
            "finished": done is not None,
            "timed_out": res.timed_out,
            "oom_killed": res.oom_killed,
            "judge": ready,
        }
        if done is not None and isinstance(done.get("build_s"), (int, float)):
            details["build_s"] = done["build_s"]
        scored = Result.scored(
            reward,
            components={"tests_passed": fraction},
            feedback=printable(feedback),
            details=_printable_tree(details),
        )
        return _with_starvation(scored, done)


def _with_starvation(result: Result, done: dict[str, Any] | None) -> Result:
    """``result`` with ``details["starved_step"]`` when the judge found a build or test's
    timeout caused by the machine starving it (its ``D`` line's ``starved``): the engine
    never lets a ``fail`` stand on it (``_raise_if_starved``)."""
    evidence = done.get("starved") if done is not None else None
    if not isinstance(evidence, dict):
        return result
    kept = {k: v for k, v in evidence.items() if isinstance(v, bool | int | float)}
    return result.model_copy(update={"details": {**result.details, "starved_step": kept}})


def _compile_allowance(spec: CodeTestsSpec) -> float:
    """Seconds a compiled language's build may take before the tests' ``timeout_s`` starts."""
    try:
        lang = language_for(spec.language)
    except BadInput:
        return 0.0
    return spec.compile_timeout_s if lang.toolchain is not None else 0.0


def _job(spec: CodeTestsSpec, kind: TestKind, lang: Language, nonce: str) -> dict[str, Any]:
    """The judge's job (read from stdin in the sandbox, before any candidate code runs)."""
    return {
        "nonce": nonce,
        "run": kind.run,
        "code_path": lang.source_file,
        "module": "solution",
        "tests": kind.payload(spec.tests),
        "total_timeout_s": spec.timeout_s,
        "test_timeout_s": spec.per_test_timeout,
        "limits": {"memory_bytes": spec.memory_mb << 20},
        "output_cap": spec.output_bytes,
        "text_cap": 2000,
    }


def _program(
    spec: CodeTestsSpec, lang: Language, code: str
) -> tuple[dict[str, Any], dict[str, str | bytes]]:
    """The judge's build-and-run recipe and the files of a non-Python language's sample.

    Raises:
        BadInput: the spec asks for what this language's harness cannot do.
    """
    chain = lang.toolchain
    assert chain is not None
    source = lang.source_for(code, spec.tests.kind)
    extra, steps, run = kind_for(spec.tests, lang).program(spec.tests, lang, chain, source)
    files: dict[str, str | bytes] = {source: code, **extra}
    fill = {
        "{src}": source,
        "{harness}": chain.harness_file,
        "{mem}": str(spec.memory_mb),
        "{cls}": source.rsplit(".", 1)[0],
        "{tsmode}": "check" if spec.typecheck else "transpile",
    }

    def filled(argv: tuple[str, ...]) -> list[str]:
        out = []
        for arg in argv:
            for key, value in fill.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out

    compile_steps = [filled(step) for step in steps]
    if spec.warnings_as_errors and compile_steps and chain.werror:
        first = compile_steps[0]
        compile_steps[0] = [first[0], *chain.werror, *first[1:]]
    program = {
        "tools": list(chain.tools),
        "compile": compile_steps,
        "run": filled(run),
        "vm": chain.vm,
        "compile_memory_bytes": (spec.memory_mb + chain.build_memory_mb) << 20,
        "compile_timeout_s": spec.compile_timeout_s,
        "build_dir": BUILD_DIR,
        "mark": _callgen.MARK,
    }
    return program, files


def _compile_failed(
    spec: CodeTestsSpec,
    lang: Language,
    info: dict[str, Any],
    expected_n: int,
    kind: str,
    ready: dict[str, Any],
) -> Result:
    """The model's failure: its code did not build (errors, warnings-as-errors, or a compile
    that ran past the time budget: an infinite template or constexpr loop)."""
    output = str(info.get("output") or "")
    if info.get("status") == "timeout":
        head = (
            f"Compilation did not finish within its time limit ({spec.compile_timeout_s:g}s, "
            "compile_timeout_s); no test ran."
        )
    else:
        head = f"Compilation failed (exit status {info.get('returncode')}); no test ran."
    lines = [ln for ln in output.splitlines() if ln.strip()]
    # The compiler's first messages name the file and line (solution.cpp:3:5: error: ...).
    shown = "\n".join(lines[:25])
    feedback = head + ("\n" + shown if shown else "")
    if len(feedback) > spec.feedback_chars:
        feedback = feedback[: spec.feedback_chars - 20] + "\n... (truncated)"
    return Result.scored(
        0.0,
        components={"tests_passed": 0.0},
        feedback=printable(feedback),
        details=_printable_tree(
            {
                "kind": kind,
                "language": lang.name,
                "passed": 0,
                "expected": expected_n,
                "compile": {k: info.get(k) for k in ("status", "returncode", "duration_s")},
                "finished": True,
                "judge": ready,
            }
        ),
    )


def _printable_tree(value: Any) -> Any:
    """``value`` with every string (keys too) made writable (see ``printable``)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_printable_tree(k): _printable_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable_tree(v) for v in value]
    return value


def _feedback(
    spec: CodeTestsSpec, outcomes: list[Outcome], passed: int, expected: int, notes: list[str]
) -> str:
    lines = [f"{passed}/{expected} tests passed."]
    lines += notes
    failures = [o for o in outcomes if not o.passed]
    for o in failures[: spec.max_failures_shown]:
        text = f"- {o.name}: {o.summary}"
        if o.detail:
            detail = o.detail if len(o.detail) <= 700 else o.detail[:700] + "..."
            text += "\n  " + detail.replace("\n", "\n  ")
        lines.append(text)
    if len(failures) > spec.max_failures_shown:
        lines.append(f"({len(failures) - spec.max_failures_shown} more failing tests not shown)")
    text = "\n".join(lines)
    if len(text) > spec.feedback_chars:
        text = text[: spec.feedback_chars - 20] + "\n... (truncated)"
    return text


def _brief(o: Outcome) -> dict[str, Any]:
    rec = {"name": o.name, "status": o.status}
    if not o.passed:
        rec["summary"] = o.summary[:300]
    return rec
