"""One ``game.godot`` check in a fresh sandbox job and engine, and how any engine run is read.

:class:`CheckJob` (a check's harness job, its tokens, and how its end and the files it left
become a :class:`~._checks.RunReport`) is shared by both ways a check runs: a fresh engine
(:func:`run_fresh`, below) and a forked child of the fork server (``_forkbatch.py``), so the
verdict logic is one piece of code. :func:`run_fresh` is what the verifier falls back to
whenever the fork server cannot give a check a certain verdict (``_forkqueue.py``).

Every way the run can end (parse error, a crash of the engine, ``quit()``, a timeout, an
out-of-memory kill, a huge scene, a forged report) is the model's ``fail``. A runtime that
cannot start is ``SandboxUnavailable`` (``error/infra``), decided before model code runs or
by a probe when the engine did not start at all (exit 126/127).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.sandbox import ExecResult

from verifiers.context import VerifierContext
from verifiers.errors import SandboxUnavailable
from verifiers.gates import process_end, read_left

from ._checks import RunReport
from ._engine import ENGINE
from ._jail import NO_JAIL
from ._spec import ContactProbe, GodotSpec
from ._tscn import SceneState, TscnError, parse_tscn

__all__ = ["LEFT_FILES", "PROJECT", "RUNTIME", "CheckJob", "probe_runtime", "run_fresh"]

RUNTIME = ENGINE.runtime
"""The sandbox runtime game.godot jobs run in (``sandbox/images/godot``)."""
PROJECT = (
    b"config_version=4\n\n"
    b"[application]\n\n"
    b'config/name="verifiers-job"\n\n'
    b"[logging]\n\n"
    b"file_logging/enable_file_logging=false\n"
)
"""The job's ``project.godot``: the verifier's own, never the model's."""
_PIDS = 128
_MAX_REPORT = 1 << 20
_MAX_STATE = 32 << 20
_NOT_STARTED = (126, 127, NO_JAIL)
"""Exit statuses that may mean the engine never started (not found, not runnable, the
jail refused by the kernel). The model's code can exit with them too, so they trigger a
probe of the runtime (when report A is missing), never an abstain by themselves."""
_JAIL = Path(__file__).with_name("_jail.py").read_bytes()


async def run_fresh(files: dict[str, str], spec: GodotSpec, ctx: VerifierContext) -> RunReport:
    """One check in a fresh job and engine: the one-engine-per-check path (the fork
    server's fallback, and the benchmark's cold baseline)."""
    check = CheckJob.of(files, spec)
    limits: dict[str, Any] = {
        "timeout_s": spec.timeout_s,
        "memory_mb": spec.memory_mb,
        "pids": _PIDS,
        "file_bytes": _MAX_STATE,
    }
    async with ctx.sandbox(RUNTIME, **limits) as sb:
        # read-only: the jail lets the engine read only files that exist when it starts,
        # so a file the model rewrote in place would be the one way to load its own bytes
        await sb.write_files(dict(files), readonly=True)
        await sb.write_files(
            {
                "project.godot": PROJECT,
                "_harness.gd": ENGINE.harness_source(),
                "_jail.py": _JAIL,
                "_job.json": json.dumps(check.job).encode(),
            },
            readonly=True,
        )
        await sb.write_files({"_token": check.token_line().encode()})
        done = await sb.exec(_jailed(ENGINE.argv(spec.fps)), timeout=spec.timeout_s)
        left = {
            name: await read_left(sb, name, _MAX_STATE if name.endswith(".tscn") else _MAX_REPORT)
            for name in LEFT_FILES
        }
    return await check.report(done, left, ctx)


LEFT_FILES = ("_report_a.json", "_report_b.json", "_state0.tscn", "_state1.tscn")
"""What the harness leaves in the project for the host to read."""


@dataclass
class CheckJob:
    """One check's harness job and tokens, and how its engine run is read back: shared by
    the one-engine-per-check path and the fork server's batch (``_forkbatch.py``)."""

    spec: GodotSpec
    job: dict[str, Any]
    scripts: list[str]
    contacts: int
    token_a: str = field(default_factory=lambda: secrets.token_hex(16))
    token_b: str = field(default_factory=lambda: secrets.token_hex(16))

    @classmethod
    def of(cls, files: dict[str, str], spec: GodotSpec) -> CheckJob:
        scripts = sorted(n for n in files if n.endswith(".gd"))
        contacts = [[p.node, p.other] for p in spec.probes if isinstance(p, ContactProbe)]
        job = {
            "scripts": [f"res://{s}" for s in scripts],
            "scene": f"res://{spec.scene}",
            "frames": spec.frames,
            "max_nodes": spec.max_nodes,
            "fps": spec.fps,
            "contacts": contacts,
        }
        return cls(spec, job, scripts, len(contacts))

    def token_line(self) -> str:
        """The ``_token`` file's text (the harness reads and deletes it first)."""
        return f"{self.token_a} {self.token_b}\n"

    async def report(
        self, done: ExecResult, left: dict[str, bytes | None], ctx: VerifierContext
    ) -> RunReport:
        """What the run shows, from its end and the files it left (``LEFT_FILES``)."""
        spec = self.spec
        report_a = _authentic(left["_report_a.json"], self.token_a)
        raw_b = _json(left["_report_b.json"])
        if done.returncode in _NOT_STARTED and report_a is None:
            await probe_runtime(ctx)
        how, code = process_end(done)
        payload = _proven(raw_b, self.token_b)
        proven = payload is not None
        run = RunReport(
            how=how,
            code=code,
            seconds=done.duration_s,
            cpu_s=done.cpu_s,
            stderr=done.text("stderr") + done.text("stdout"),
            report_a=report_a,
            frames_proven=proven,
            frames_note={} if proven or not isinstance(raw_b, dict) else raw_b,
            contacts=_contacts(payload, self.contacts),
            scripts=self.scripts,
            truncated=done.truncated,
        )
        if proven:
            try:
                run.start, run.end = (_state(left[f"_state{i}.tscn"], spec) for i in (0, 1))
            except TscnError as exc:
                run.state_error = str(exc)
        return run


def _proven(raw: Any, token: str) -> dict[str, Any] | None:
    """Report B's payload when its proof is the keyed hash of it under ``token`` (the
    harness's nested sha256, recomputed here): None for anything else."""
    if not isinstance(raw, dict) or not isinstance(raw.get("payload"), str):
        return None
    text = raw["payload"]
    inner = hashlib.sha256((token + text).encode()).hexdigest()
    proof = hashlib.sha256((token + inner).encode()).hexdigest()
    if not secrets.compare_digest(str(raw.get("proof", "")), proof):
        return None
    payload = _json(text.encode())
    return payload if isinstance(payload, dict) else None


def _contacts(payload: dict[str, Any] | None, count: int) -> list[dict[str, Any]]:
    listed = (payload or {}).get("contacts")
    if not isinstance(listed, list) or len(listed) != count:
        return []
    return [c if isinstance(c, dict) else {} for c in listed]


def _jailed(argv: list[str]) -> list[str]:
    """``argv`` started through ``_jail.py`` (no ``/proc``, no memory reads; see there)."""
    return ["python3", "_jail.py", *argv]


def _state(data: bytes | None, spec: GodotSpec) -> SceneState:
    if data is None:
        raise TscnError("the harness saved no state")
    return parse_tscn(data.decode("utf-8", "replace"), max_nodes=spec.max_nodes)


def _json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None


def _authentic(data: bytes | None, token: str) -> dict[str, Any] | None:
    raw = _json(data)
    if not isinstance(raw, dict) or not secrets.compare_digest(str(raw.get("token", "")), token):
        return None
    parse = raw.get("parse")
    shadows = raw.get("shadows")
    return {
        "scene": raw.get("scene") if isinstance(raw.get("scene"), str) else "",
        "parse": {str(k): v is True for k, v in parse.items()} if isinstance(parse, dict) else {},
        "shadows": {str(k): str(v)[:100] for k, v in shadows.items()}
        if isinstance(shadows, dict)
        else {},
    }


async def probe_runtime(ctx: VerifierContext) -> None:
    """Start the engine alone: a runtime where it cannot is ``SandboxUnavailable``.

    Raises:
        SandboxUnavailable: the godot runtime cannot run its engine.
    """
    async with ctx.sandbox(RUNTIME, timeout_s=60, pids=_PIDS, memory_mb=1024) as sb:
        await sb.write_files({"_jail.py": _JAIL}, readonly=True)
        run = await sb.exec(_jailed([ENGINE.binary, "--version"]), timeout=60)
    # Godot 3 prints its version and exits 255: the version line is the evidence, not the
    # status (judging by the status made every probe fail, so an exit of 126/127/97 before
    # report A would have been an abstain).
    if not run.text("stdout").strip().startswith(f"{ENGINE.major}."):
        tail = " | ".join(run.text("stderr").strip().splitlines()[-3:])
        raise SandboxUnavailable(
            f"the godot runtime cannot start {ENGINE.binary} in its jail (Landlock and "
            f"seccomp, see _jail.py): {tail or run.returncode}",
            hint="run `verifiers sandbox build godot` (and .ci/setup.d/50-engines.sh)",
        )
