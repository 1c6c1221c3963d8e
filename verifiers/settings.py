"""Every ``VERIFIERS_*`` environment variable, in one registry that the docs table is made from.

A setting nobody can find is a setting nobody can trust: before this registry about 30
variables were read in a dozen places and some were in no doc. So each variable is declared
here once (:data:`VARIABLES`: name, default, meaning, the module that reads it), the table in
``docs/settings.md`` is generated from it (``python -m verifiers.settings docs/settings.md``;
a test fails when the file is stale), and a test scans the whole tree for ``VERIFIERS_*``
names and fails on one that is not declared here.

Code in the core reads a variable through :func:`env`, which refuses an undeclared name, so a
new variable cannot be read without being declared (and then documented). The engine's own
settings (:class:`~verifiers.EngineSettings`) are declared from its fields: each field ``f``
has the override ``VERIFIERS_<F>``.

Example:
    >>> from verifiers.settings import env, variable
    >>> variable("VERIFIERS_CACHE_DIR").default
    '~/.cache/verifiers'
    >>> env("VERIFIERS_" "TYPO")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    KeyError: "..._TYPO is not a declared setting (add it to verifiers/settings.py's VARIABLES)"
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidSettings

__all__ = ["VARIABLES", "Variable", "cache_dir", "env", "env_flag", "render_table", "variable"]


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable the project reads."""

    name: str
    """``VERIFIERS_...``."""
    default: str
    """The value used when it is unset, in words."""
    meaning: str
    """What it changes (one sentence; Markdown)."""
    read_by: str
    """The module (or script) that reads it."""


_ENGINE = "verifiers/engine.py (EngineSettings.from_env)"

VARIABLES: tuple[Variable, ...] = (
    # -- the engine: EngineSettings fields (tests check this list against the model) --------
    Variable(
        "VERIFIERS_CONCURRENCY", "8", "Items verified at once (non-inline verifiers).", _ENGINE
    ),
    Variable(
        "VERIFIERS_TIMEOUT_S",
        "120",
        "Per-item deadline in seconds; past it the item is `error`/`timeout` (a verifier that "
        "declares a larger budget gets that budget plus 10 s).",
        _ENGINE,
    ),
    Variable(
        "VERIFIERS_RETRIES", "2", "Extra attempts for retryable `infra` errors only.", _ENGINE
    ),
    Variable(
        "VERIFIERS_RETRY_BACKOFF_S", "0.5", "First retry backoff; doubles each retry.", _ENGINE
    ),
    Variable(
        "VERIFIERS_FAIL_FAST_AFTER",
        "0 (library), 10 (`verifiers score`)",
        "Stop after this many identical non-retryable infra errors in a row; `0` never stops.",
        _ENGINE + "; verifiers/cli/_score.py",
    ),
    Variable(
        "VERIFIERS_CACHE",
        "off (library), on (`verifiers score`)",
        "Result cache: `1`/`true` for the default file, `0`/`false` for none, or a path.",
        _ENGINE + "; verifiers/cli/_score.py",
    ),
    Variable(
        "VERIFIERS_SANDBOX",
        "auto",
        "Sandbox backend: `auto`, `none`, `docker`, `local`, `fake` or a plugin's.",
        _ENGINE,
    ),
    Variable("VERIFIERS_WORKERS", "CPU count", "Worker processes for CPU-heavy checks.", _ENGINE),
    Variable(
        "VERIFIERS_WORKER_MEMORY_MB", "4096", "Default memory limit of a worker job, MiB.", _ENGINE
    ),
    Variable(
        "VERIFIERS_WINDOW",
        "4 x concurrency",
        "Items in flight before results are emitted (ordered streaming).",
        _ENGINE,
    ),
    # -- core ------------------------------------------------------------------------------
    Variable(
        "VERIFIERS_CACHE_DIR",
        "~/.cache/verifiers",
        "Root of the result cache (`results.sqlite`) and of the finance PDF table cache.",
        "verifiers/settings.py (cache_dir: verifiers/cache.py, domains/finance/_sources.py)",
    ),
    Variable(
        "VERIFIERS_LOCK_DIR",
        "/dev/shm (else the temp dir)",
        "Where machine-wide slot files live (`SyncEngine(machine_concurrency=)`, the "
        "adapters' `machine_concurrency`, the sandbox runners' home CPUs of "
        "`SandboxSettings.cpu_pinning`).",
        "verifiers/_machine.py, sandbox/_cpus.py",
    ),
    Variable(
        "VERIFIERS_MACHINE_CONCURRENCY",
        "unset (auto)",
        'The adapters\' machine-wide limit when `machine_concurrency="auto"`; `0` turns it off.',
        "verifiers/_machine.py",
    ),
    # -- sandbox ---------------------------------------------------------------------------
    Variable(
        "VERIFIERS_SANDBOX_CACHE",
        "/var/cache/verifiers-sandbox (root), else ~/.cache/verifiers-sandbox",
        "Where built runtimes (root filesystems) are cached, by definition hash.",
        "sandbox/_runtimes.py",
    ),
    Variable(
        "VERIFIERS_SANDBOX_IMAGES",
        "unset",
        "Extra folders (`:`-separated) searched for runtime definitions.",
        "sandbox/_images.py",
    ),
    Variable(
        "VERIFIERS_SANDBOX_WORKDIR",
        "/tmp",
        "Parent directory of the local backend's per-job work directories.",
        "sandbox/_local.py",
    ),
    Variable(
        "VERIFIERS_DEBIAN_MIRROR",
        "the host apt's bookworm mirror",
        "Debian mirror used to bootstrap runtime root filesystems.",
        "sandbox/_images.py",
    ),
    # -- domains ---------------------------------------------------------------------------
    Variable(
        "VERIFIERS_FINANCE_PDF_CACHE",
        "1",
        "`0` (or `false`/`no`/`off`) turns off the on-disk cache of PDF tables; a value that "
        "is not on/off is an error.",
        "domains/finance/_sources.py (env_flag)",
    ),
    Variable(
        "VERIFIERS_RENDER_OUTPUT_DIR",
        "unset",
        "Also write each rendered image there (debugging).",
        "domains/render/_verifier.py",
    ),
    Variable(
        "VERIFIERS_JUDGE_PREFORK",
        "1",
        "Inside the code sandbox only: `1` pre-forks the candidate before the judge starts.",
        "domains/code/_judge.py (in the sandbox)",
    ),
    Variable(
        "VERIFIERS_JOB_CPU",
        "set by the runner",
        "Inside a sandbox job only, set by the runner after the request's env (a request cannot "
        "set it): the job's read-only CPU account (a cgroup file, `pids`, or empty), which the "
        "code judge's time limits read to tell a starved step from a slow one.",
        "domains/code/_judge.py (in the sandbox), sandbox/_runner.py",
    ),
    Variable(
        "VERIFIERS_JOB_STARTED",
        "set by the runner",
        "Inside a sandbox job only, set by the runner after the request's env (a request cannot "
        "set it): when the job's clock started (the runner's CLOCK_MONOTONIC, in seconds), from "
        "which the code judge and the workspace runner count their exec's wall limit (the job's "
        "process may be older: a zygote's spare is forked ahead).",
        "domains/code/_judge_candidate.py (in the sandbox), sandbox/_runner.py",
    ),
    # -- adapters --------------------------------------------------------------------------
    Variable(
        "VERIFIERS_VERIFIER",
        "unset",
        "OpenRLHF file mode: the default verifier for rows without a task.",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_SPEC",
        "unset",
        "OpenRLHF file mode: that verifier's spec (JSON).",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_COMPONENTS",
        "unset",
        "OpenRLHF file mode: comma-separated component names for `extra_logs`.",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_GROUP_SIZE",
        "unset",
        "OpenRLHF file mode: `--rollout.n_samples_per_prompt` (zero-advantage abstains).",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_GROUP_WAIT_S",
        "60",
        "OpenRLHF file mode: how long a group waits for its other samples.",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_INVALID_SCORE",
        "unset",
        "OpenRLHF file mode: a finite score written for abstains (with the validity flag).",
        "rl_adapters/openrlhf.py",
    ),
    Variable(
        "VERIFIERS_ORS_TASKS",
        "unset",
        "A JSONL of task rows: `verifiers serve` then mounts the Open Reward Standard routes.",
        "rl_adapters/_ors_hook.py; rl_adapters/ors.py",
    ),
    Variable(
        "VERIFIERS_OPENENV_TASKS",
        "unset",
        "A JSONL of task rows: `verifiers serve` then serves OpenEnv's reset/step/state routes "
        "(HTTP and WebSocket) under `/openenv`.",
        "rl_adapters/openenv.py",
    ),
    # -- tests and CI ----------------------------------------------------------------------
    Variable(
        "VERIFIERS_SHARED_DATA",
        "../shared/data",
        "Tests only: where the real test data (TAT-QA, meshes, PDFs) is.",
        "tests/conftest.py",
    ),
    Variable(
        "VERIFIERS_PYTHON311",
        "the first python3.11 on PATH",
        "CI only: the Python 3.11 that builds the local bpy venv.",
        ".ci/setup.d/30-blender.sh",
    ),
    Variable(
        "VERIFIERS_CI_MYPY_CACHE",
        "~/.cache/verifiers/ci-mypy",
        "CI only: mypy's incremental cache for the wheel's type check, kept between runs; "
        "empty: a cold run.",
        ".ci/check_wheel.sh",
    ),
)
"""Every variable, grouped by the part of the project that reads it."""

_BY_NAME = {v.name: v for v in VARIABLES}


def variable(name: str) -> Variable:
    """The declaration of ``name``.

    Raises:
        KeyError: ``name`` is not declared in :data:`VARIABLES`.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"{name} is not a declared setting (add it to verifiers/settings.py's VARIABLES)"
        ) from None


def env(name: str) -> str | None:
    """The value of the declared variable ``name`` in the environment, or ``None`` if unset.

    Raises:
        KeyError: ``name`` is not declared (declare it, and the docs table follows).
    """
    variable(name)
    return os.environ.get(name)


_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def env_flag(name: str, default: bool) -> bool:
    """The declared on/off variable ``name``: ``default`` when unset or empty.

    ``1``/``true``/``yes``/``on`` and ``0``/``false``/``no``/``off`` (any case) are understood.

    Raises:
        KeyError: ``name`` is not declared.
        InvalidSettings: any other value (a typo must not silently mean "on").
    """
    raw = env(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _ON or value in _OFF:
        return value in _ON
    raise InvalidSettings(
        [f"{name}={raw!r}: not an on/off value; use one of {', '.join(_ON + _OFF)}"]
    )


def cache_dir() -> Path:
    """The root of every on-disk cache (the result cache, the finance PDF tables).

    ``$VERIFIERS_CACHE_DIR``, else ``~/.cache/verifiers``.
    """
    root = env("VERIFIERS_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "verifiers"


def render_table() -> str:
    """The Markdown table of :data:`VARIABLES` that ``docs/settings.md`` holds."""
    rows = ["| Variable | Default | Meaning | Read by |", "|---|---|---|---|"]
    for v in VARIABLES:
        rows.append(f"| `{v.name}` | {v.default} | {v.meaning} | `{v.read_by}` |")
    return "\n".join(rows) + "\n"


_BEGIN = "<!-- settings table: generated by `python -m verifiers.settings docs/settings.md` -->"
_END = "<!-- end of settings table -->"


def write_docs(path: Path) -> None:
    """Replace the table between the markers in ``path`` with :func:`render_table`."""
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(_BEGIN)
    _, _, tail = rest.partition(_END)
    path.write_text(f"{head}{_BEGIN}\n{render_table()}{_END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    write_docs(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/settings.md"))
