"""``code.workspace``: the agent's final tree, judged by hidden tests in a fresh sandbox.

Why a fresh sandbox: the episode's sandbox is the agent's; anything it left there (background
processes, a doctored ``conftest.py``, a symlink where the hidden tests will land, files outside
the tree) must not take part in the verdict. So the verdict is always made the same way, live
or offline: a fresh sandbox of the task's runtime gets the starting tree, the task's setup
commands, then the agent's *changes* (a file map or a unified diff applied on the host, regular
files only), then, read-only and over anything named like them, the hidden tests and the
judge's runner (``_pytest_run.py``). An episode submits exactly the change set its own
sandbox's tree shows (:func:`snapshot`), so re-scoring the logged trajectory offline gives the
same reward.

Reward: with ``pass_to_pass`` every listed test must pass (else 0) and the reward is the share
of ``fail_to_pass`` (default: every other hidden test) that pass; missing, skipped or errored
tests count as failed, and the expected tests are counted from the hidden files' syntax before
anything of the agent runs.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from verifiers.domains.code import compare_output
from verifiers.domains.code._verifier import _with_starvation
from verifiers.sandbox import Limits, Sandbox

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, InvalidOutput
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text
from verifiers.types import Result, Trajectory

from ._spec import WorkspaceSpec
from ._strict import HELPER_MODULE, HELPER_SOURCE, harden_test_source
from ._tree import RESERVED_DIR, Changes, changes_between, parse_changes, parse_tar

__all__ = ["Workspace", "prepare", "snapshot", "static_test_ids"]

_HERE = Path(__file__).parent
_CODE = _HERE.parent / "code"


@cache
def runner_files() -> dict[str, str]:
    """The trusted runner, the project process's server and root, and code.tests' candidate
    machinery they share (shipped as the package ``_vj``, with what it imports: the codec and
    the starvation rule, the sandbox runner's own source as the code judge ships it), written
    read-only to ``.verifiers/``. Built on first use: cutting the rule from the runner's file
    parses it, which ``import verifiers.domains.workspace`` should not pay."""
    from verifiers.sandbox._runner import rule_source

    files = {
        f"{RESERVED_DIR}/{dest}": src.read_text(encoding="utf-8")
        for dest, src in {
            "_pytest_run.py": _HERE / "_pytest_run.py",
            "_project_server.py": _HERE / "_project_server.py",
            "_project_root.py": _HERE / "_project_root.py",
            "_vj/_judge_codec.py": _CODE / "_judge_codec.py",
            "_vj/_judge_candidate.py": _CODE / "_judge_candidate.py",
        }.items()
    }
    files[f"{RESERVED_DIR}/_vj/_judge_starvation.py"] = rule_source()
    files[f"{RESERVED_DIR}/_vj/__init__.py"] = ""
    files[f"{RESERVED_DIR}/{HELPER_MODULE}.py"] = HELPER_SOURCE
    return files


_STARTUP_S = 10.0
_SNAPSHOT_BYTES = 32 << 20


def static_test_ids(files: dict[str, str]) -> list[str]:
    """Test ids a pytest run of ``files`` must report, from their syntax (no code runs).

    Module-level ``test*`` functions and ``test*`` methods of ``Test*`` classes; a
    parametrised test is one id that passes only when all its cases pass.

    Raises:
        BadInput: a hidden test file does not parse (a broken task).
    """
    ids: list[str] = []
    for path, source in sorted(files.items()):
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(source, filename=path)
        except SyntaxError as exc:
            raise BadInput(
                f"code.workspace spec: hidden test {path} does not parse: {exc}"
            ) from None
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("test"):
                    ids.append(f"{path}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        if sub.name.startswith("test"):
                            ids.append(f"{path}::{node.name}::{sub.name}")
    return ids


def check_proxy_limits(files: dict[str, str]) -> None:
    """Refuse hidden tests that need what the project proxies cannot give (the task's fault).

    The tests run in a trusted process and reach the project's modules through proxies into
    the project's own process (``_pytest_run``), so a test module that *subclasses* a class it
    imported from the project cannot run. Detected from the syntax, before anything runs: a
    ``class`` whose base is rooted at a name imported from a module that is neither the
    standard library nor installed here.

    Raises:
        BadInput: a hidden test subclasses a project class.
    """
    import importlib.util
    import sys

    def project(module: str) -> bool:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in ("pytest", "_pytest"):
            return False
        try:
            return importlib.util.find_spec(top) is None
        except (ImportError, ValueError):
            return True

    for path, source in sorted(files.items()):
        if not path.endswith(".py"):
            continue
        tree = ast.parse(source, filename=path)
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if project(node.module):
                    names.update(a.asname or a.name for a in node.names if a.name != "*")
            elif isinstance(node, ast.Import):
                names.update(
                    (a.asname or a.name).split(".")[0] for a in node.names if project(a.name)
                )
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                root = base
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in names:
                    raise BadInput(
                        f"code.workspace spec: hidden test {path} subclasses the project's "
                        f"{ast.unparse(base)} (class {node.name}); the hidden tests run apart "
                        "from the project, which they reach through proxies, so a test "
                        "cannot subclass its classes: test through instances and functions"
                    )


async def prepare(sandbox: Sandbox, spec: WorkspaceSpec, *, timeout: float) -> None:
    """Write the starting tree and run the setup commands in ``sandbox``.

    Raises:
        BadInput: a setup command failed (the task is broken, not the model).
    """
    if spec.files:
        await sandbox.write_files(dict(spec.files))
    deadline = time.monotonic() + timeout
    for argv in spec.setup:
        left = max(1.0, deadline - time.monotonic())
        res = await sandbox.exec(list(argv), timeout=left)
        if not res.ok:
            raise BadInput(
                f"code.workspace setup command {argv!r} failed (exit {res.returncode}, "
                f"timed_out={res.timed_out}): {res.text('stderr')[-400:]}"
            )
    if not spec.setup and not spec.files:
        await sandbox.exec(["true"])  # claim the work dir now, as a setup would


async def snapshot(sandbox: Sandbox) -> tuple[dict[str, str], list[str]]:
    """The regular text files of ``sandbox``'s work dir, and what was left out (links...).

    Raises:
        InvalidOutput: the tree is too large (the agent's doing).
        InfraError: ``tar`` did not run (the runtime lacks it).
    """
    res = await sandbox.exec(
        # --ignore-failed-read: a file or directory the agent made unreadable is left out
        # (its doing: that file is not submitted), never a failed snapshot (an abstain).
        ["tar", "-cf", "-", "--format=gnu", "--ignore-failed-read", "."],
        timeout=60,
        limits=Limits(timeout_s=60, memory_mb=256, output_bytes=_SNAPSHOT_BYTES),
    )
    if res.truncated or res.timed_out:
        # Only the agent's tree can make our own tar big or slow (nothing of the agent runs now).
        raise InvalidOutput("the workspace tree is too large to submit (too many or too big files)")
    if res.returncode not in (0, 1):  # 1: a file changed while being read
        raise InfraError(f"could not read the workspace tree: {res.text('stderr')[-300:]}")
    try:
        return parse_tar(res.stdout)
    except InvalidOutput:
        raise
    except Exception as exc:  # a tar stream our own tar wrote and we cannot read: not the model's
        raise InfraError(f"could not parse the workspace tree: {exc}") from None


def diff_changes(before: dict[str, str], after: dict[str, str]) -> Changes:
    """The change set an episode submits: its final tree against the tree after setup."""
    return changes_between(before, after)


_PARAM = re.compile(r"\[.*\]$")


@register("code.workspace")
class Workspace(Verifier[WorkspaceSpec]):
    """Share of hidden tests the agent's final tree passes (SWE-bench semantics on request)."""

    version: ClassVar[str] = "2"
    Spec = WorkspaceSpec

    def budget_s(self, spec: WorkspaceSpec) -> float:
        """Setup, tests and io checks share ``timeout_s``, plus start-up grace."""
        return spec.timeout_s + _STARTUP_S

    def hidden_values(self, spec: WorkspaceSpec, reference: Any) -> list[str]:
        """What feedback under the ``public`` policy must never show (see verifiers.episode)."""
        if spec.public_tests:
            return []
        hidden: list[str] = []
        for path, source in spec.tests.items():
            hidden.append(path)
            hidden.extend(_literals_and_names(source))
        for check in spec.io:
            hidden.extend([check.name, check.stdout.strip(), check.stdin.strip()])
        hidden.extend(spec.fail_to_pass or [])
        hidden.extend(spec.pass_to_pass)
        return [h for h in hidden if h]

    async def prepare_episode(
        self, sandbox: Sandbox, spec: WorkspaceSpec, *, timeout: float
    ) -> dict[str, str]:
        """Lay out the starting tree and run setup in an episode's sandbox; the tree after
        setup is the baseline the agent's changes are taken against."""
        await prepare(sandbox, spec, timeout=min(timeout, spec.timeout_s))
        tree, _ = await snapshot(sandbox)
        return tree

    async def episode_answer(
        self, sandbox: Sandbox, spec: WorkspaceSpec, baseline: dict[str, str]
    ) -> str:
        """The episode's completion: the change set of its tree as a JSON file map.

        Raises:
            InvalidOutput: the tree is too large. InfraError: it could not be read.
        """
        tree, _ = await snapshot(sandbox)
        return json.dumps(changes_between(baseline, tree), sort_keys=True)

    async def verify(
        self, trajectory: Trajectory, spec: WorkspaceSpec, ctx: VerifierContext
    ) -> Result:
        changes, form = parse_changes(completion_text(trajectory), spec.files)
        return await self.judge(changes, spec, ctx, form=form)

    async def judge(
        self, changes: Changes, spec: WorkspaceSpec, ctx: VerifierContext, *, form: str = "files"
    ) -> Result:
        """Apply ``changes`` over the starting tree in a fresh sandbox and run the hidden tests."""
        expected = static_test_ids(spec.tests)
        check_proxy_limits(spec.tests)
        io_ids = [f"io::{c.name}" for c in spec.io]
        known = set(expected) | set(io_ids)
        for test_id in [*(spec.fail_to_pass or []), *spec.pass_to_pass]:
            if test_id not in known:
                raise BadInput(
                    f"code.workspace spec: test id {test_id!r} is not a hidden test "
                    f"(known: {', '.join(sorted(known))[:300]})"
                )
        changes, ignored = _drop_collisions(changes, set(spec.tests))
        notes: list[str] = []
        if ignored:
            notes.append(
                f"{len(ignored)} change(s) to paths the hidden tests use were ignored; the "
                "tests are copied in after your files"
            )
        nonce = secrets.token_hex(16)
        budget = spec.timeout_s + _STARTUP_S
        outcomes: dict[str, tuple[bool, str]] = {}
        starved: dict[str, Any] | None = None
        async with ctx.sandbox(
            spec.runtime, timeout_s=budget, memory_mb=spec.memory_mb, output_bytes=4 << 20
        ) as sb:
            deadline = time.monotonic() + spec.timeout_s
            await prepare(sb, spec, timeout=spec.timeout_s)
            writes: dict[str, bytes | str] = {p: v for p, v in changes.items() if v is not None}
            deletes = [p for p, v in changes.items() if v is None]
            # A written file replaces whatever is at its path or at a parent's path (a file
            # where the agent now has a directory, a directory where it now has a file);
            # otherwise the runner's write fails and the agent's 0 would become an abstain.
            # A parent is cleared only when it is not a real directory: clearing a directory
            # would drop the starting tree's other files in it (``inv/__init__.py`` when the
            # agent changed only ``inv/models.py``).
            clear = sorted({*deletes, *writes})
            for start in range(0, len(clear), 200):
                await sb.exec(["rm", "-rf", "--", *clear[start : start + 200]], timeout=30)
            parents = sorted(_parents(writes) - set(clear))
            for start in range(0, len(parents), 200):
                await sb.exec(
                    [
                        "sh",
                        "-c",
                        'for p; do [ -d "$p" ] && [ ! -L "$p" ] || rm -rf -- "$p"; done',
                        "sh",
                        *parents[start : start + 200],
                    ],
                    timeout=30,
                )
            if writes:
                await sb.write_files(writes)
            for check in spec.io:
                left = max(0.5, deadline - time.monotonic())
                res = await sb.exec(list(check.argv), stdin=check.stdin.encode(), timeout=left)
                ok = (
                    res.returncode == 0
                    and not res.truncated
                    and compare_output(
                        res.text(), check.stdout, check.compare, rel_tol=1e-6, abs_tol=1e-9
                    )
                )
                why = "" if ok else _io_why(res.returncode, res.timed_out, res.text("stderr"))
                outcomes[f"io::{check.name}"] = (ok, why)
            if spec.tests:
                # The hidden .py files never touch the disk (the project could read them as an
                # oracle): they reach the trusted runner on stdin. Data files the tests read
                # are written read-only over the tree.
                hardened = {p: harden_test_source(t) for p, t in spec.tests.items()}
                await sb.write_files(
                    {
                        **{p: t for p, t in hardened.items() if not p.endswith(".py")},
                        **runner_files(),
                    },
                    readonly=True,
                )
                left = max(1.0, deadline - time.monotonic())
                exec_timeout = left + _STARTUP_S / 2
                # The exec's limit in the job too: the runner stops extending a starved call
                # before the sandbox's kill would leave no verdict (``exec_end``).
                job = {
                    "nonce": nonce,
                    "tests": hardened,
                    "timeout_s": left,
                    "exec_timeout_s": exec_timeout,
                }
                res = await sb.exec(
                    ["python3", "-I", f"{RESERVED_DIR}/_pytest_run.py"],
                    stdin=json.dumps(job).encode(),
                    timeout=exec_timeout,
                )
                ready, verdict = _verdict(res.stdout, nonce)
                if not ready:
                    # Nothing of the agent runs before the ready line, so without it the runner
                    # itself did not start (no python3, a broken runtime): not the model's doing.
                    # After it, any exit code (os._exit(127) included) is the project's.
                    raise InfraError(
                        f"the workspace test runner did not start (exit {res.returncode}): "
                        f"{res.text('stderr')[-300:]}"
                    )
                if verdict is None:
                    why = "timed out" if res.timed_out else f"was killed (exit {res.returncode})"
                    notes.append(f"the hidden test run {why} before it reported; no test counts")
                    verdict = {"results": {}}
                if verdict.get("infra_error"):
                    raise InfraError(f"workspace test runner: {verdict['infra_error']}")
                if isinstance(verdict.get("starved"), dict):
                    starved = verdict
                if verdict.get("abandoned") and starved is not None:
                    # The runner ended the run on a call the machine starved through its
                    # grace: no score stands on it (the engine abstains on ``starved_step``).
                    ids = expected + io_ids
                    components = {"tests_passed": 0.0}
                    if spec.pass_to_pass:
                        components["pass_to_pass"] = 0.0
                    abandoned = Result.failed(
                        "A hidden test was starved of CPU by machine load through its grace; "
                        "the run was ended there and is not scored.",
                        components=components,
                        details={
                            "form": form,
                            "changed_files": len(changes),
                            "passed": [],
                            "failed": sorted(ids),
                            "finished": False,
                        },
                    )
                    return _with_starvation(abandoned, starved)
                if verdict.get("crashed"):
                    notes.append(f"the test run ended early: {verdict['crashed']}")
                results: dict[str, dict[str, str]] = dict(verdict.get("results") or {})
                for test_id in expected:
                    cases = [
                        rec
                        for nodeid, rec in results.items()
                        if nodeid == test_id or _PARAM.sub("", nodeid) == test_id
                    ]
                    passed = bool(cases) and all(r.get("status") == "passed" for r in cases)
                    message = next(
                        (str(r.get("message", "")) for r in cases if r.get("status") != "passed"),
                        "not reported (did not run)" if not cases else "",
                    )
                    outcomes[test_id] = (passed, message)
        scored = _score(spec, expected + io_ids, outcomes, notes, form, len(changes))
        return _with_starvation(scored, starved)


def _io_why(returncode: int, timed_out: bool, stderr: str) -> str:
    if timed_out:
        return "timed out"
    if returncode != 0:
        return f"exit {returncode}: {stderr.strip()[-200:]}"
    return "wrong output"


def _verdict(stdout: bytes, nonce: str) -> tuple[bool, dict[str, Any] | None]:
    """Whether the runner said it was ready, and its verdict (the last nonce line after it).

    An ``infra_error`` counts only before the runner's ``started`` line: after it the
    project's code runs in the runner's interpreter and could write one (an abstain for a
    certain 0); such a line is then the project's and no test counts.
    """
    prefix = (nonce + " ").encode()
    ready = False
    started = False
    verdict: dict[str, Any] | None = None
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            data = json.loads(line[len(prefix) :])
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        if data.get("ready") is True and not ready:
            ready = True
        elif ready and data.get("started") is True and not started:
            started = True
        elif ready:
            if started and "infra_error" in data:
                data = {"crashed": "the project reported a runner failure of its own making"}
            verdict = data
    return ready, verdict


def _parents(paths: Iterable[str]) -> set[str]:
    return {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}


def _drop_collisions(changes: Changes, hidden: set[str]) -> tuple[Changes, list[str]]:
    """Changes minus those at, under or above a hidden test's path."""
    kept: Changes = {}
    ignored: list[str] = []
    dirs = {"/".join(p.split("/")[:i]) for p in hidden for i in range(1, p.count("/") + 1)}
    for path, value in changes.items():
        if path in hidden or path in dirs or any(path.startswith(h + "/") for h in hidden):
            ignored.append(path)
        else:
            kept[path] = value
    return kept, ignored


def _score(
    spec: WorkspaceSpec,
    ids: list[str],
    outcomes: dict[str, tuple[bool, str]],
    notes: list[str],
    form: str,
    n_changes: int,
) -> Result:
    def ok(test_id: str) -> bool:
        return outcomes.get(test_id, (False, ""))[0]

    p2p = list(spec.pass_to_pass)
    f2p = (
        list(spec.fail_to_pass)
        if spec.fail_to_pass is not None
        else [t for t in ids if t not in set(p2p)]
    )
    broke = [t for t in p2p if not ok(t)]
    f2p_passed = sum(1 for t in f2p if ok(t))
    share = f2p_passed / len(f2p) if f2p else (0.0 if broke else 1.0)
    reward = 0.0 if broke else share
    components = {"tests_passed": share}
    if p2p:
        components["pass_to_pass"] = (len(p2p) - len(broke)) / len(p2p)
    lines = [f"{f2p_passed} of {len(f2p)} hidden tests pass."]
    if broke:
        lines.append(f"{len(broke)} of {len(p2p)} tests that passed before now fail: reward 0.")
    failing = [t for t in ids if not ok(t)][:5]
    for test_id in failing:
        lines.append(f"FAILED {test_id}: {outcomes.get(test_id, (False, 'not run'))[1]}"[:500])
    lines.extend(notes)
    return Result.scored(
        reward,
        components=components,
        feedback="\n".join(lines),
        details={
            "form": form,
            "changed_files": n_changes,
            "passed": sorted(t for t in ids if ok(t)),
            "failed": sorted(t for t in ids if not ok(t)),
        },
    )


def _literals_and_names(source: str) -> list[str]:
    """Names of tests/classes/functions and literal values in a hidden test file."""
    out: list[str] = []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [line.strip() for line in source.splitlines() if len(line.strip()) >= 6]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
            if not isinstance(node.value, bool):
                out.append(str(node.value))
        elif isinstance(node, ast.Assert):
            out.append(ast.unparse(node.test))
    return out
