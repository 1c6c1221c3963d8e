"""Pin the public names of the modules users import directly: io, cache, cli, schema, report."""

from __future__ import annotations

import subprocess
import sys

import verifiers.cache
import verifiers.cli
import verifiers.io
import verifiers.report
import verifiers.schema


def test_all_is_pinned() -> None:
    assert sorted(verifiers.io.__all__) == [
        "DEFAULT_MAX_LINE_BYTES",
        "Format",
        "InputRecord",
        "ParquetResultWriter",
        "ResultWriter",
        "ResumeState",
        "detect_format",
        "iter_records",
        "open_result_writer",
        "parse_line",
        "prepare_resume",
        "read_results",
        "read_trajectories",
        "skip_done",
        "validation_reason",
    ]
    assert sorted(verifiers.cache.__all__) == ["ResultCache", "default_cache_path"]
    assert sorted(verifiers.cli.__all__) == ["main", "run"]
    assert sorted(verifiers.schema.__all__) == [
        "SCHEMAS",
        "default_dir",
        "main",
        "render",
        "schema_for",
    ]
    assert sorted(verifiers.report.__all__) == ["build_report", "write_report"]
    for module in (
        verifiers.io,
        verifiers.cache,
        verifiers.cli,
        verifiers.schema,
        verifiers.report,
    ):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_cli_modules_stay_light() -> None:
    """Importing the CLI (what the console script does first) loads no heavy dependency."""
    code = (
        "import sys, verifiers.cli, verifiers.io, verifiers.cache; "
        "print(','.join(m for m in ('pandas', 'pyarrow', 'matplotlib', 'torch', 'docker', "
        "'rich', 'sympy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("verifiers ")
