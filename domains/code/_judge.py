"""The judge: runs one job's tests in the sandbox and signs each result (stdlib only).

The judge (``python3 .judge/boot.py``, trusted) reads its job (test code, inputs, a random
per-run nonce) from stdin, turns itself non-dumpable (so a same-uid process cannot read its
memory, fds or environment through ``/proc`` or ``ptrace``), runs the test code against the
candidate process (``_judge_candidate``) or the built program, and writes one result line per
test, prefixed with the nonce, to a private duplicate of its stdout (``_judge_record`` defines
the lines). Anything the candidate does to its own process changes nothing the judge believes;
killing or stopping the judge leaves the host without the nonce-signed done line, which the host
scores as 0.

One ``Judge.run_<name>`` per way of running tests (:data:`RUNS`); the host's test kind
(``_kinds``) names the one its job needs in the job's ``run`` key. Adding a test kind is one
class there and one function here.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
import types

from ._judge_candidate import (
    Candidate,
    CandidateError,
    CandidateTimeout,
    Clock,
    Remote,
    RemoteCallable,
    _candidate_main,
    _hands_off_installer,
    _RemoteModule,
    _Sink,
    exec_end,
    python_env,
)
from ._judge_candidate import Patience as _Patience
from ._judge_codec import CodecError, decode, encode
from ._judge_record import JUDGE_FILE, line

# Kept out of the judge's start-up path (every millisecond here is paid per sample); mypy
# treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Judge:
    """Runs one job and writes nonce-signed result lines to a private fd."""

    def __init__(self, job: dict[str, Any], out_fd: int, cand: Candidate) -> None:
        self.job = job
        self.nonce = str(job["nonce"])
        self.out_fd = out_fd
        self.cand = cand
        self.t0 = time.monotonic()
        self.end = exec_end(job.get("exec_timeout_s"))
        """Past this no step waits, starved or not (see ``exec_end``)."""
        self.total = Clock(float(job.get("total_timeout_s", 30)), self.end)
        """The tests' total limit (``timeout_s``), which asks the starvation rule too."""
        self.test_timeout = float(job.get("test_timeout_s", 10))
        self.step: Clock | None = None
        """The current test's own limit (``test_timeout_s``)."""
        self.text_cap = int(job.get("text_cap", 2000))
        self.build_s: float | None = None
        """Seconds from the judge's start to a built program (compiled languages)."""
        self.cpu0 = _START_CPU
        self.starved: dict[str, Any] | None = None
        """The evidence of the first test whose timeout the machine's starvation caused."""

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "D":
            # Every done line carries the evidence of a step whose clock ran out while the
            # machine starved it (the host abstains on it), whichever run found it.
            if "starved" not in payload:
                payload = self._starved(payload, None)
            # The last line: the candidate is done with, and reaped so that its CPU counts.
            self.cand.kill()
            me = resource.getrusage(resource.RUSAGE_SELF)
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            usage = {
                "boot_start": _BOOT_CPU,
                "judge_start": self.cpu0,
                "judge": me.ru_utime + me.ru_stime,
                "children": children.ru_utime + children.ru_stime,
            }
            payload = {**payload, "usage": usage}
        data = line(self.nonce, kind, payload)
        while data:
            n = os.write(self.out_fd, data)
            data = data[n:]

    def _starved(self, payload: dict[str, Any], patience: _Patience | None) -> dict[str, Any]:
        """``payload`` for the ``D`` line, with ``starved`` when a timed step's timeout came
        from the machine starving it (see :class:`_Patience`): the host abstains then."""
        found = patience.starved if patience is not None else None
        if found is None:
            found = self.starved
        if found is None:
            found = self.cand.starved
        return {**payload, "starved": found} if found is not None else payload

    def abandon(self, evidence: dict[str, Any]) -> None:
        """End the run on a step the machine starved through its grace (or to the exec end):
        its score is no score (the host abstains on the evidence), so the judge says so at
        once, before anything else runs. Under that starvation the rest of the run (later
        tests, pytest's own wrap-up) could outlast the exec's limit, and the runner's kill
        would leave no done line: the model's 0."""
        if self.starved is None:
            self.starved = evidence
        self.emit("D", {"abandoned": True})
        os._exit(0)

    @property
    def deadline(self) -> float:
        """The tests' total deadline as it stands (a starved run's moves on)."""
        return self.total.deadline

    def start_test(self) -> bool:
        """Start the next test under its own clock; False once the total limit is reached
        for good (asked of the starvation rule first: a starved run goes on)."""
        if self.total.expired():
            if self.total.starved is not None:
                self.abandon(self.total.starved)
            return False
        self.step = Clock(self.test_timeout, self.end)
        self.cand.clocks = [self.total, self.step]
        self.cand.deadline = None
        self.cand.last_call = None
        self.cand.fault = None
        return True

    def _case_deadline(self) -> float:
        """A program case's deadline: its test limit from now, within the total one."""
        return min(self.deadline, time.monotonic() + self.test_timeout)

    def fault_record(self, name: str, **fields: Any) -> dict[str, Any] | None:
        """The failed record of a test during which the candidate died, hung or did not load.

        However the test handled the exception it saw (``pytest.raises(Exception)``, a bare
        ``except``), the candidate's death is its failure, never the test's pass.
        """
        info = self.cand.fault
        if info is None:
            return None
        status = "timeout" if info.get("type") == "Timeout" else "error"
        return self.outcome(
            name,
            status,
            **self.exc_fields(info),
            **fields,
        )

    def exc_fields(self, info: dict[str, Any]) -> dict[str, Any]:
        """A test record's ``exc_type``, ``message`` and ``tb`` from the candidate's account of
        an exception (its type, message and traceback tail, bounded)."""
        return {
            "exc_type": info.get("type"),
            "message": str(info.get("message", ""))[: self.text_cap],
            "tb": str(info.get("tb", ""))[-self.text_cap :],
        }

    def outcome(self, name: str, status: str, **fields: Any) -> dict[str, Any]:
        out, err = self.cand.output()
        rec: dict[str, Any] = {"name": name, "status": status, **fields}
        last = self.cand.last_call
        if status != "passed" and last is not None and "index" not in fields:
            target, args, reply = last
            rec["last_call"] = {
                "target": target,
                "args": _short_json(args),
                "result": _short_json(reply.get("value")) if "value" in reply else None,
            }
        if out:
            rec["stdout"] = out[-self.text_cap :]
        if err:
            rec["stderr"] = err[-self.text_cap :]
        return rec

    def failure(self, name: str, exc: Exception, **fields: Any) -> dict[str, Any]:
        info = getattr(exc, "candidate_info", None)
        if isinstance(exc, CandidateError):
            info = exc.info
            status = "timeout" if isinstance(exc, CandidateTimeout) else "error"
            if exc.kind == "load":
                status = "error"
            return self.outcome(
                name,
                status,
                **self.exc_fields(info),
                **fields,
            )
        if info is not None:
            return self.outcome(
                name,
                "error",
                **self.exc_fields(info),
                **fields,
            )
        import traceback

        # Drop the judge's own frames: the model should see the test's lines only.
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.endswith(JUDGE_FILE) and f.filename != self.cand.harness
        ]
        tail = "".join(
            traceback.format_list(frames[-4:]) + traceback.format_exception_only(type(exc), exc)
        )
        tail = tail[-self.text_cap :]
        status = "failed" if isinstance(exc, AssertionError) else "error"
        return self.outcome(
            name,
            status,
            exc_type=type(exc).__name__,
            message=str(exc)[: self.text_cap],
            tb=tail,
            **fields,
        )

    # -- kinds ---------------------------------------------------------------------------------

    def run_assert(self) -> None:
        tests = self.job["tests"]
        ns: dict[str, Any] = {"__name__": "__tests__"}
        import linecache

        for fname, src in (("<prelude>", tests.get("prelude") or ""), ("<tests>", tests["code"])):
            lines = src.splitlines(keepends=True)
            linecache.cache[fname] = (len(src), None, lines, fname)
        try:
            if tests.get("prelude"):
                exec(compile(tests["prelude"], "<prelude>", "exec"), ns)  # noqa: S102 - trusted spec code, in the sandbox
            exec(compile(tests["code"], "<tests>", "exec"), ns)  # noqa: S102 - trusted spec code, in the sandbox
        except Exception as exc:
            self.emit(
                "D", {"spec_error": f"test code failed to load: {type(exc).__name__}: {exc}"[:500]}
            )
            return
        entry = tests.get("entry_point")
        name = f"check({entry})" if entry else "tests"
        if not self.start_test():
            self.emit("T", self.outcome(name, "timeout", message="total time limit reached"))
        else:
            try:
                if entry:
                    self.cand.ensure()
                    if self.cand.load_error is not None:
                        raise CandidateError("load", self.cand.load_error)
                    check = ns.get("check")
                    if not callable(check):
                        self.emit(
                            "D", {"spec_error": "test code defines no check(candidate) function"}
                        )
                        return
                    candidate = RemoteCallable(self.cand, None, None, [entry])
                    # HumanEval semantics: the entry point's name in the test code means the
                    # candidate's function, not the prelude's stub.
                    ns[entry] = candidate
                    check(candidate)
                else:
                    # No entry point: the test code itself drives the candidate through ``solution``.
                    # A pass needs positive evidence: check(solution) ran to the end.
                    if not callable(ns.get("check")):
                        self.emit(
                            "D", {"spec_error": "test code defines no check(solution) function"}
                        )
                        return
                    ns.setdefault("solution", _RemoteModule(self.cand, "solution"))
                    ns["check"](ns["solution"])
                self.emit("T", self.fault_record(name) or self.outcome(name, "passed"))
            except Exception as exc:
                self.emit("T", self.failure(name, exc))
        self.emit("D", {})

    def run_call(self) -> None:
        """Call the entry point once per case in the candidate; values are judged on the host."""
        self.cand.ensure()
        tests = self.job["tests"]
        entry = str(tests["entry_point"])
        for i, case in enumerate(tests["cases"]):
            name = case.get("name") or f"case {i}"
            if not self.start_test():
                self.emit(
                    "T", self.outcome(name, "timeout", index=i, message="total time limit reached")
                )
                continue
            try:
                value = self.cand.remote(
                    "call",
                    None,
                    entry.split("."),
                    args=case.get("args", []),
                    kwargs=case.get("kwargs", {"$": "dict", "v": []}),
                )
                rec = self.outcome(name, "returned", index=i)
                rec["value"] = (
                    self.cand.encode_arg(value) if not isinstance(value, Remote) else None
                )
                if isinstance(value, Remote):
                    rec["opaque"] = repr(value)[:200]
                self.emit("T", rec)
            except CandidateError as exc:
                rec = self.failure(name, exc, index=i)
                if exc.kind == "raised":
                    rec["status"] = "raised"
                self.emit("T", rec)
        self.emit("D", {})

    # -- compiled and scripted languages (a ``program`` in the job, see ``_languages``) ------

    def _program_env(self) -> dict[str, str]:
        """A program's environment: the runtime's job environment (PATH, toolchain caches)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIERS_")}
        env.setdefault("PATH", "/usr/bin:/bin")
        env["LANG"] = "C.UTF-8"
        return env

    def _limit_fn(self, mem: int | None) -> Callable[[], None]:
        hands_off = _hands_off_installer()

        def limit() -> None:
            import resource

            if mem:
                resource.setrlimit(resource.RLIMIT_AS, (int(mem), int(mem)))
            hands_off()  # the program cannot act on the judge (see _hands_off_filter)

        return limit

    def _start(
        self, argv: list[str], mem: int | None, *, stdin: int, stderr: int, env: Any = None
    ) -> Any:
        """A child that runs model code (or its compiler): its own session, the job's memory
        limit and the hands-off filter, stdout a pipe."""
        import subprocess

        return subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env=self._program_env() if env is None else env,
            preexec_fn=self._limit_fn(mem),
        )

    def build(self) -> bool:
        """Compile the program (each step a child with the job's limits and time budget).

        Returns False after writing the ``D`` line: ``infra_error`` when a toolchain is missing
        (decided before any candidate code runs), ``compile`` with the compiler's output when
        the candidate's code did not build or its compile ran past the time budget (the
        model's failure: an infinite template or constexpr loop is a timeout, never an abstain).
        """
        import shutil
        import subprocess

        prog = self.job["program"]
        missing = [t for t in prog.get("tools", []) if shutil.which(str(t)) is None]
        if missing:
            self.emit("D", {"infra_error": f"toolchain not installed in the runtime: {missing}"})
            return False
        os.makedirs(str(prog.get("build_dir", "build")), exist_ok=True)
        mem = None if prog.get("vm") else prog.get("compile_memory_bytes")
        compile_limit = float(prog.get("compile_timeout_s", 60))
        build_deadline = time.monotonic() + compile_limit
        if self.end is not None:
            build_deadline = min(build_deadline, self.end)
        patience = _Patience(compile_limit, self.end)
        for step in prog.get("compile", []):
            t = time.monotonic()
            if build_deadline <= t:  # an earlier step ran into the limit and finished after it
                later = patience.more()
                if later is None:
                    timeout = {"compile": {"status": "timeout", "output": ""}}
                    self.emit("D", self._starved(timeout, patience))
                    return False
                build_deadline = later
            try:
                proc = self._start(
                    [str(a) for a in step], mem, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT
                )
            except OSError as exc:
                self.emit("D", {"infra_error": f"cannot start {step[0]}: {exc}"})
                return False
            assert proc.stdout is not None
            sink = _Sink(os.dup(proc.stdout.fileno()), 64 << 10)
            proc.stdout.close()
            patience.started(proc.pid)
            # A starved build runs on (up to STARVE_GRACE x its limit), and later steps with it.
            timed_out = _communicate(
                os.open(os.devnull, os.O_WRONLY), b"", [sink], build_deadline, patience
            )
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            sink.pump()
            sink.close()
            text = bytes(sink.buf).decode("utf-8", "replace")
            if timed_out or proc.returncode != 0:
                self.emit(
                    "D",
                    self._starved(
                        {
                            "compile": {
                                "status": "timeout" if timed_out else "failed",
                                "returncode": proc.returncode,
                                "output": text[: self.text_cap * 2],
                                "duration_s": round(time.monotonic() - t, 3),
                            }
                        },
                        patience if timed_out else None,
                    ),
                )
                return False
        self.build_s = round(time.monotonic() - self.t0, 4)
        # The tests' own time (timeout_s) starts once the program is built.
        self.total = Clock(float(self.job.get("total_timeout_s", 30)), self.end)
        self.cand.clocks = [self.total]
        return True

    def run_program_call(self) -> None:
        """Run the generated call harness (``_callgen``) and turn its lines into records.

        The candidate shares the harness's process, so any line may be its own: only one
        record per case is taken, for the case being waited on, in order; a record for any
        other case fails the current one. A crash, exit or hang fails the current case and the
        harness is restarted at the next one. Values are checked on the host.
        """
        import subprocess

        prog = self.job["program"]
        cases = self.job["tests"]["cases"]
        n = len(cases)
        mark = str(prog.get("mark", "\x1e@")).encode()
        mem = None if prog.get("vm") else self.cand.limits.get("memory_bytes")
        cap = self.cand.output_cap
        i = 0
        while i < n:
            if not self.start_test():
                for k in range(i, n):
                    self.emit(
                        "T",
                        {"index": k, "status": "timeout", "message": "total time limit reached"},
                    )
                break
            proc = self._start(
                [*[str(a) for a in prog["run"]], str(i)],
                mem,
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert proc.stdout is not None and proc.stderr is not None
            out_fd = os.dup(proc.stdout.fileno())
            err = _Sink(os.dup(proc.stderr.fileno()), cap)
            proc.stdout.close()
            proc.stderr.close()
            os.set_blocking(out_fd, False)
            buf = bytearray()
            seen = 0
            chatter = bytearray()
            case_deadline = self._case_deadline()
            patience = _Patience(case_deadline - time.monotonic(), self.end)
            patience.started(proc.pid)
            ended: dict[str, Any] | None = None
            eof = False
            while ended is None and not eof:
                left = case_deadline - time.monotonic()
                if left <= 0:
                    later = patience.more()
                    if later is not None:
                        case_deadline = later
                        continue
                    if self.starved is None:
                        self.starved = patience.starved
                    ended = {
                        "status": "timeout",
                        "message": f"no result within {self.test_timeout:g}s",
                    }
                    break
                live = [out_fd] + ([err.fd] if err.fd >= 0 else [])
                rd, _, _ = select.select(live, [], [], left)
                if err.fd in rd:
                    err.pump()
                if out_fd not in rd:
                    continue
                try:
                    chunk = os.read(out_fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    eof = True
                seen += len(chunk)
                buf += chunk
                if seen > cap + (n + 1) * 4096:
                    ended = {"status": "error", "message": "output too long (truncated)"}
                    break
                while ended is None and b"\n" in buf:
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf = bytearray(rest)
                    if not line.startswith(mark):
                        chatter += line[:cap] + b"\n"
                        del chatter[: max(0, len(chatter) - self.text_cap)]
                        continue
                    rec = self._call_record(line[len(mark) :], i)
                    if chatter:
                        rec["stdout"] = chatter.decode("utf-8", "replace")
                        chatter = bytearray()
                    self.emit("T", rec)
                    i += 1
                    if rec.get("forged"):
                        ended = {}
                        break
                    if i >= n:
                        ended = {}
                        break
                    if not self.start_test():
                        ended = {}
                        break
                    case_deadline = self._case_deadline()
                    patience = _Patience(case_deadline - time.monotonic(), self.end)
                    patience.started(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            os.close(out_fd)
            err.pump()
            err.close()
            if ended == {}:
                continue
            if ended is None:
                rc = proc.returncode
                why = (
                    f"killed by signal {-rc}"
                    if rc is not None and rc < 0
                    else f"exited with status {rc}"
                )
                ended = {"status": "error", "message": f"the program {why} during this call"}
            rec = {"index": i, **ended}
            stderr = bytes(err.buf).decode("utf-8", "replace")
            if stderr:
                rec["stderr"] = stderr[-self.text_cap :]
            if chatter:
                rec["stdout"] = chatter.decode("utf-8", "replace")
            self.emit("T", rec)
            i += 1
        self.emit("D", self._starved({"build_s": self.build_s}, None))

    def _call_record(self, body: bytes, i: int) -> dict[str, Any]:
        kind, _, rest = body.partition(b" ")
        index, _, payload = rest.partition(b" ")
        if kind not in (b"R", b"X") or index != str(i).encode():
            return {
                "index": i,
                "status": "error",
                "forged": True,
                "message": "the program wrote a harness record out of turn (only the harness "
                "may write lines starting with \\x1e@)",
            }
        try:
            value = json.loads(payload.decode("utf-8", "strict"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return {"index": i, "status": "error", "message": "unreadable return value"}
        if kind == b"X":
            # C++, Java, JS/TS send {"type", "message"} (the type is matched against a case's
            # ``raises``; "" for the harness's own errors); Go and Rust panics a message only.
            exc_type, message = "exception", value
            if isinstance(value, dict):
                exc_type = str(value.get("type", ""))[:200]
                message = value.get("message", "")
            return {
                "index": i,
                "status": "raised",
                "exc_type": exc_type,
                "message": str(message)[: self.text_cap],
            }
        try:
            return {"index": i, "status": "returned", "value": encode(value)}
        except (CodecError, RecursionError, ValueError):
            return {"index": i, "status": "error", "message": "return value too large or deep"}

    def run_io(self) -> None:
        """Run the program once per case on its stdin; outputs are judged on the host."""
        import subprocess

        self.cand.kill()  # no candidate process: each case runs the program itself

        tests = self.job["tests"]
        code_path = self.cand.code_path
        prog = self.job.get("program")
        env = python_env()
        argv = [sys.executable, code_path]
        mem = self.cand.limits.get("memory_bytes")
        if prog is not None:
            argv = [str(a) for a in prog["run"]]
            env = self._program_env()
            if prog.get("vm"):
                mem = None
        cap = self.cand.output_cap
        for i, case in enumerate(tests["cases"]):
            name = case.get("name") or f"case {i}"
            if not self.start_test():
                self.emit(
                    "T",
                    {
                        "name": name,
                        "index": i,
                        "status": "timeout",
                        "message": "total time limit reached",
                    },
                )
                continue
            timeout = max(0.01, self._case_deadline() - time.monotonic())
            t = time.monotonic()
            proc = self._start(argv, mem, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            outs = [
                _Sink(os.dup(proc.stdout.fileno()), cap),
                _Sink(os.dup(proc.stderr.fileno()), cap),
            ]
            proc.stdout.close()
            proc.stderr.close()
            feed_fd = os.dup(proc.stdin.fileno())
            proc.stdin.close()
            patience = _Patience(timeout, self.end)
            patience.started(proc.pid)
            timed_out = _communicate(
                feed_fd, case.get("stdin", "").encode(), outs, t + timeout, patience
            )
            if timed_out and self.starved is None:
                self.starved = patience.starved
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            for sink in outs:
                sink.pump()
                sink.close()
            rec: dict[str, Any] = {
                "name": name,
                "index": i,
                "status": "timeout" if timed_out else "ran",
                "returncode": proc.returncode,
                "stdout": bytes(outs[0].buf).decode("utf-8", "replace"),
                "stdout_truncated": outs[0].dropped > 0,
                "stderr": bytes(outs[1].buf).decode("utf-8", "replace")[-self.text_cap :],
                "duration_s": round(time.monotonic() - t, 4),
            }
            self.emit("T", rec)
        self.emit(
            "D", self._starved({} if self.build_s is None else {"build_s": self.build_s}, None)
        )

    def run_pytest(self) -> None:
        """Run the pytest files; the candidate never sees or shapes them.

        The test files never exist on disk: pytest is given empty placeholders to discover, and
        every module (test files and helper files alike) is compiled from the judge's memory
        (with pytest's assertion rewriting) by ``_TestSources``, which also answers imports of
        helper files. So a candidate that runs during collection (``EMPTY = Stack()`` at module
        level) finds nothing to read, nothing to rewrite, and no directory of the judge's import
        path to plant a module in. ``from solution import *`` is compiled into a binding of the
        candidate's own public functions and classes that shadows no builtin and no name the
        test module already has. A module whose collection fails once the candidate was
        involved counts as (at least) its statically counted tests, failed.
        """
        import linecache
        import tempfile

        tests = self.job["tests"]
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        sys.dont_write_bytecode = True
        try:
            import pytest
        except Exception as exc:
            self.emit(
                "D", {"infra_error": f"pytest is not importable in the sandbox: {exc!r}"[:300]}
            )
            return
        module = str(tests.get("module", "solution"))
        remote_module = _RemoteModule(self.cand, module)
        sys.modules[module] = remote_module
        tdir = tempfile.mkdtemp(prefix=".t", dir=os.getcwd())
        sources = _TestSources(self, module, remote_module, _public_names(self.cand.code_path))
        paths = []
        for rel, text in sorted(tests["files"].items()):
            path = os.path.join(tdir, rel)
            try:
                tree = sources.add(rel, path, str(text))
            except SyntaxError as exc:
                self.emit(
                    "D",
                    {
                        "spec_error": f"test file {rel} failed to collect (it does not compile): {exc}"[
                            :500
                        ]
                    },
                )
                return
            lines = str(text).splitlines(keepends=True)
            linecache.cache[path] = (len(str(text)), None, lines, path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if rel.endswith(".py"):
                # An empty placeholder for pytest to discover; the source stays in memory.
                with open(path, "w", encoding="utf-8"):
                    pass
                paths.append(path)
            sources.static[path] = _static_test_count(tree)
        sys.meta_path.insert(0, sources)
        ini = os.path.join(tdir, "pytest.ini")
        with open(ini, "w") as fh:
            fh.write("[pytest]\n")
        judge = self

        class MemoryModule(pytest.Module):  # type: ignore[misc]
            def _getobj(self) -> Any:
                return sources.load_test_module(str(self.path), self.config)

        class Plugin:
            def __init__(self) -> None:
                self.collected: list[str] = []
                self.collect_errors: list[str] = []
                self.results: dict[str, dict[str, Any]] = {}

            @pytest.hookimpl(tryfirst=True)
            def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
                if str(module_path) in sources.by_path:
                    return MemoryModule.from_parent(parent, path=module_path)
                return None

            def pytest_collectreport(self, report: Any) -> None:
                if report.failed:
                    path = os.path.join(tdir, str(report.nodeid).split("::")[0])
                    text = f"{report.nodeid}: {str(report.longrepr)[-800:]}"
                    if path in sources.blamed:
                        sources.blamed[path] = text
                    else:
                        self.collect_errors.append(text)

            def pytest_collection_finish(self, session: Any) -> None:
                self.collected = [item.nodeid for item in session.items]

            @pytest.hookimpl(tryfirst=True)
            def pytest_runtest_setup(self, item: Any) -> None:
                if not judge.start_test():
                    pytest.fail("total time limit reached", pytrace=False)

            def pytest_runtest_logreport(self, report: Any) -> None:
                rec = self.results.setdefault(
                    report.nodeid, {"name": report.nodeid, "status": "passed"}
                )
                if report.when == "call" and report.passed and rec["status"] == "passed":
                    rec["ran"] = True
                fault = judge.fault_record(report.nodeid)
                if fault is not None and rec["status"] == "passed":
                    # The candidate died, hung or never loaded during this test: failed,
                    # whatever the test caught (``pytest.raises(Exception)``).
                    fault["phase"] = report.when
                    rec.clear()
                    rec.update(fault)
                elif report.failed and rec["status"] == "passed":
                    rec["status"] = "failed"
                    rec["phase"] = report.when
                    text = str(report.longrepr)
                    rec["tb"] = text[-judge.text_cap :]
                    exc = getattr(report.longrepr, "reprcrash", None)
                    if exc is not None:
                        rec["message"] = str(exc.message)[: judge.text_cap]
                elif report.skipped and rec["status"] == "passed":
                    rec["status"] = "skipped"

        plugin = Plugin()
        args = [
            *paths,
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",
            "--continue-on-collection-errors",
            "-c",
            ini,
            "--rootdir",
            tdir,
            "-o",
            "addopts=",
            "-o",
            "python_functions=test*",
            "--tb=short",
            "--capture=sys",
        ]
        # Collection needs a time limit too: module-level code may call the candidate. Its
        # clock starts here: the judge's pytest import before it is not the step's time.
        self.step = Clock(self.test_timeout, self.end)
        self.cand.clocks = [self.total, self.step]
        self.cand.deadline = None
        try:
            code = pytest.main(args, plugins=[plugin])
        except Exception as exc:
            self.emit("D", {"infra_error": f"pytest crashed: {exc!r}"[:300]})
            return
        if plugin.collect_errors:
            self.emit(
                "D",
                {
                    "spec_error": "test files failed to collect: "
                    + " | ".join(plugin.collect_errors)[:1500],
                    "collected": plugin.collected,
                },
            )
            return
        out, err = self.cand.output()
        expected = list(plugin.collected)
        for path, why in sorted(sources.blamed.items()):
            # A module whose collection the candidate broke: each of its tests failed.
            rel = os.path.relpath(path, tdir)
            n = max(1, sources.static.get(path, 1))
            for k in range(n):
                name = f"{rel}::<not collected {k + 1}/{n}>"
                expected.append(name)
                self.emit(
                    "T",
                    {
                        "name": name,
                        "status": "error",
                        "message": "the test module failed to collect: " + why[-1500:],
                    },
                )
        for nodeid in plugin.collected:
            rec = plugin.results.get(nodeid, {"name": nodeid, "status": "missing"})
            if rec.get("status") == "passed" and not rec.pop("ran", False):
                rec["status"] = "missing"
            rec.pop("ran", None)
            o, e = self.cand.output()
            out, err = out + o, err + e
            if out:
                rec["stdout"] = out[-self.text_cap :]
            if err:
                rec["stderr"] = err[-self.text_cap :]
            out = err = ""
            self.emit("T", rec)
        self.emit(
            "D",
            {
                "collected": expected,
                "exit_code": int(code),
                "collect_errors": [v for v in sources.blamed.values() if v][:5],
            },
        )


RUNS: dict[str, Callable[[Judge], None]] = {
    "assert": Judge.run_assert,
    "call": Judge.run_call,
    "program_call": Judge.run_program_call,
    "io": Judge.run_io,
    "pytest": Judge.run_pytest,
}
"""How the job's tests run, by the job's ``run`` key (the host's test kind chooses it).

``assert``: the test code is compiled and run first, then the model's code is loaded, so
nothing the model's module body does can make the task's own code fail and read as a broken
task. ``pytest``: the code is loaded on first use, after collection took the test files off
the disk; the preforked process waits for it. ``call``: the code is loaded first. ``io`` and
``program_call`` (a compiled language's generated call harness) run programs, not the
candidate process."""


class _StarBinder:
    """``from <module> import *`` in a test file, compiled into a call of this.

    Binds the candidate's own public functions and classes (the ``def``/``class`` names of its
    source, which the judge reads itself) that the candidate's module really has, and never a
    builtin's name or a name the test module already bound (``abs``, ``math``, an earlier
    import): a candidate cannot swap ``abs`` or ``math.isclose`` under the test's feet.
    """

    def __init__(self, module: Any, names: list[str], cand: Candidate) -> None:
        self.module = module
        self.names = names
        self.cand = cand

    def __call__(self, ns: dict[str, Any]) -> None:
        import builtins

        self.cand.touches += 1
        for name in self.names:
            if name in ns or hasattr(builtins, name):
                continue
            try:
                ns[name] = getattr(self.module, name)
            except AttributeError:
                continue


def _public_names(path: str) -> list[str]:
    """Top-level ``def``/``class`` names of the candidate's source not starting with ``_``.

    Read and parsed by the judge, never asked of the candidate. A source the parser rejects
    (or that is too deep for it) has no names: importing it will fail anyway.
    """
    import ast

    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(4 << 20))
    except Exception:
        return []
    names: list[str] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not node.name.startswith("_") and node.name not in names:
                names.append(node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                todo.extend(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return names


def _static_test_count(tree: Any) -> int:
    """Tests a pytest file defines, counted from its syntax (a lower bound: literal
    ``parametrize`` lists multiply, anything dynamic counts once)."""
    import ast

    def weight(fn: Any) -> int:
        n = 1
        for dec in fn.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and isinstance(dec.func, ast.Attribute)
                and dec.func.attr == "parametrize"
                and len(dec.args) >= 2
                and isinstance(dec.args[1], (ast.List, ast.Tuple))
            ):
                n *= max(1, len(dec.args[1].elts))
        return n

    total = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            total += weight(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            total += sum(
                weight(m)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                and m.name.startswith("test")
            )
    return total


class _TestSources:
    """Imports the task's test and helper files from the judge's memory (a meta-path finder).

    Nothing is read from disk, so nothing the candidate writes can change or add to the code
    the judge runs; test files get pytest's assertion rewriting, and ``from <module> import *``
    becomes a :class:`_StarBinder` call.
    """

    def __init__(self, judge: Judge, module: str, remote: Any, names: list[str]) -> None:
        self.judge = judge
        self.module = module
        self.binder = _StarBinder(remote, names, judge.cand)
        self.by_name: dict[str, str] = {}
        self.by_path: dict[str, tuple[str, Any]] = {}
        self.static: dict[str, int] = {}
        self.blamed: dict[str, str] = {}

    def add(self, rel: str, path: str, text: str) -> Any:
        import ast

        tree = ast.parse(text, path)
        if rel.endswith(".py"):
            name = os.path.basename(rel)[:-3]
            self.by_name.setdefault(name, path)
            dotted = rel[:-3].replace("/", ".").replace(os.sep, ".")
            self.by_name.setdefault(dotted, path)
            self.by_path[path] = (text, tree)
        return tree

    # importlib's finder/loader protocol
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        import importlib.util

        file = self.by_name.get(name)
        if file is None or name == self.module:
            return None
        return importlib.util.spec_from_loader(name, self, origin=file)  # type: ignore[arg-type]

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, mod: Any) -> None:
        file = self.by_name[mod.__name__]
        self._exec(mod, file, None)

    def _exec(self, mod: Any, file: str, config: Any) -> None:
        import ast
        import copy

        text, tree = self.by_path[file]
        tree = _StarRewriter(self.module).visit(copy.deepcopy(tree))
        ast.fix_missing_locations(tree)
        base = os.path.basename(file)
        if config is not None or base.startswith("test_") or base.endswith("_test.py"):
            try:
                from _pytest.assertion.rewrite import rewrite_asserts

                rewrite_asserts(tree, text.encode("utf-8"), file, config)
            except Exception:
                pass
        code = compile(tree, file, "exec", dont_inherit=True)
        mod.__file__ = file
        mod.__dict__["__verifiers_star__"] = self.binder
        exec(code, mod.__dict__)  # noqa: S102 - the task's trusted test code, in the sandbox

    def load_test_module(self, file: str, config: Any) -> Any:
        """The module pytest collects for ``file`` (replaces its import from disk)."""
        rel = os.path.basename(file)[:-3]
        name = next((n for n, f in self.by_name.items() if f == file and "." in n), rel)
        if self.by_name.get(rel) == file:
            name = rel
        mod = types.ModuleType(name)
        sys.modules[name] = mod
        before = self.judge.cand.touches
        try:
            self._exec(mod, file, config)
        except Exception as exc:
            if self.judge.cand.touches != before or isinstance(exc, CandidateError):
                self.blamed[file] = ""
            raise
        config.pluginmanager.consider_module(mod)
        return mod


class _StarRewriter:
    """Replaces ``from <module> import *`` (module level) with ``__verifiers_star__(globals())``."""

    def __init__(self, module: str) -> None:
        self.module = module

    def visit(self, tree: Any) -> Any:
        import ast

        def rewrite(body: list[Any]) -> list[Any]:
            out = []
            for node in body:
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.level == 0
                    and node.module == self.module
                    and any(a.name == "*" for a in node.names)
                ):
                    call = ast.Call(
                        func=ast.Name(id="__verifiers_star__", ctx=ast.Load()),
                        args=[
                            ast.Call(
                                func=ast.Name(id="globals", ctx=ast.Load()), args=[], keywords=[]
                            )
                        ],
                        keywords=[],
                    )
                    out.append(ast.copy_location(ast.Expr(value=call), node))
                    continue
                for block in ("body", "orelse", "finalbody"):
                    if isinstance(node, (ast.If, ast.Try, ast.With)) and hasattr(node, block):
                        setattr(node, block, rewrite(getattr(node, block)))
                for handler in getattr(node, "handlers", []) if isinstance(node, ast.Try) else []:
                    handler.body = rewrite(handler.body)
                out.append(node)
            return out

        tree.body = rewrite(tree.body)
        return tree


def _short_json(value: Any, limit: int = 300) -> str:
    """A readable, bounded rendering of an encoded value for feedback."""
    try:
        text = repr(decode(value, lambda d: _Shown(str(d.get("repr", "<object>")))))
    except CodecError:
        text = "<undecodable>"
    except (ValueError, RecursionError):  # repr() of an int past the string limit
        text = "<value too large to display>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Shown:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _communicate(
    feed_fd: int,
    data: bytes,
    sinks: list[_Sink],
    deadline: float,
    patience: _Patience | None = None,
) -> bool:
    """Write ``data`` to a child's stdin and drain its output until both pipes close.

    Returns True when ``deadline`` passed first (and ``patience`` found no starvation).
    """
    os.set_blocking(feed_fd, False)
    view = memoryview(data)
    if not view:
        os.close(feed_fd)
        feed_fd = -1
    while feed_fd >= 0 or any(k.fd >= 0 for k in sinks):
        left = deadline - time.monotonic()
        if left <= 0 and patience is not None:
            later = patience.more()
            if later is not None:
                deadline = later
                continue
        if left <= 0:
            if feed_fd >= 0:
                os.close(feed_fd)
            return True
        live = [k.fd for k in sinks if k.fd >= 0]
        rd, wr, _ = select.select(live, [feed_fd] if feed_fd >= 0 else [], [], left)
        for k in sinks:
            if k.fd in rd:
                k.pump()
        if feed_fd >= 0 and feed_fd in wr:
            try:
                view = view[os.write(feed_fd, view[:65536]) :]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                view = view[:0]
            if not view:
                os.close(feed_fd)
                feed_fd = -1
    return False


def _no_dump() -> bool:
    """PR_SET_DUMPABLE=0: same-uid processes lose access to our memory, fds and environ."""
    try:
        # Already non-dumpable (a runner that dropped privileges leaves its jobs so): the
        # kernel then hands /proc/self to root. Saves importing ctypes on the hot path.
        if os.getuid() != 0 and os.stat("/proc/self/environ").st_uid == 0:
            return True
    except OSError:
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(4, 0, 0, 0, 0) == 0)
    except Exception:
        return False


def _writable(path: str) -> bool:
    """Whether this uid (the candidate's too) could add a module to ``path``.

    Root could write anywhere, so the test says nothing there (the sandboxes never run jobs
    as root; the bare test sandbox does).
    """
    try:
        if os.geteuid() == 0:
            return False
        return os.access(path, os.W_OK)
    except (OSError, ValueError):
        return False


_BOOT_CPU = float(globals().get("__boot_cpu__") or 0.0)
"""CPU seconds of this process when the boot script started (0.0 outside the boot)."""
_START_CPU = 0.0


def _judge_main(harness: str) -> int:
    global _START_CPU
    started = resource.getrusage(resource.RUSAGE_SELF)
    _START_CPU = started.ru_utime + started.ru_stime
    dumpable_off = _no_dump()
    # As a fresh interpreter would have it (a runner's zygote may hand us SIG_DFL): a
    # candidate that closes its pipe must give EPIPE here, not kill the judge.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # Only the standard library and installed packages may be imported from here on: never
    # the script's directory or the work directory, where the candidate can write files.
    here = os.path.dirname(harness)
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here, cwd)]
    # Anything else on the import path must be out of the job's reach: a module the candidate
    # planted there would run inside the judge the next time it imports lazily (and in every
    # later job). Dropping such entries would break the judge's own imports and score honest
    # code 0, so a sandbox like that is refused as infrastructure instead.
    open_dirs = [p for p in sys.path if _writable(p)]
    # Results go to a private duplicate of stdout; fds 1 and 2 then point to /dev/null so that
    # nothing else (pytest's own output, test prints) can interleave with or crowd them out.
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    cand = Candidate(harness, "", "solution", {}, 64 << 10)
    kind_hint = os.environ.get("VERIFIERS_JUDGE_PREFORK", "1")
    if kind_hint == "1":
        try:
            cand.prefork()
        except OSError:
            cand.pid = None
    # Only now read the job: the forked candidate never had it in memory.
    job = json.loads(sys.stdin.buffer.read())
    # Keep fds 0-2 occupied so later pipes never land on them (a child's stdio would
    # replace them).
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    cand.code_path = os.path.abspath(str(job["code_path"]))
    cand.module = str(job.get("module", "solution"))
    cand.limits = dict(job.get("limits", {}))
    cand.output_cap = int(job.get("output_cap", 64 << 10))
    judge = Judge(job, out_fd, cand)
    cand.load_timeout = judge.test_timeout
    cand.end = judge.end
    cand.on_starved = judge.abandon
    cand.clocks = [judge.total]
    judge.emit("R", {"dumpable_off": dumpable_off, "python": sys.version.split()[0]})
    if open_dirs:
        cand.kill()
        judge.emit(
            "D",
            {
                "infra_error": "the sandbox lets jobs write to the judge's import path "
                f"({', '.join(open_dirs)[:300]}): mount the runtime read-only"
            },
        )
        return 0
    run = RUNS.get(str(job.get("run")))
    try:
        if run is None:
            judge.emit("D", {"spec_error": f"unknown test kind {job['tests'].get('kind')!r}"})
        elif job.get("program") is not None:
            cand.kill()
            # The host runs a compiled language in two execs of one session (see
            # ``_verifier``): "build" compiles and stops; "run" runs the tests on the build.
            phase = job.get("phase")
            if phase == "build":
                if judge.build():
                    judge.emit("D", {"built": True, "build_s": judge.build_s})
            elif phase == "run" or judge.build():
                run(judge)
        else:
            run(judge)
    finally:
        cand.kill()
    return 0


def main(argv: list[str]) -> int:
    """The judge's entry (``argv[0]`` is the boot script), or a fresh candidate's."""
    if len(argv) >= 2 and argv[1] == "candidate":
        _candidate_main(int(argv[2]), int(argv[3]))
        return 0
    return _judge_main(os.path.abspath(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
