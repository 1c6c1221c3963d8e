"""Pin the public names of the modules users import directly: io, cache, cli, schema, report,
gates (the shared rules of render, cad and godot)."""

from __future__ import annotations

import subprocess
import sys

from api_pins import assert_pinned, heavy_imports

import verifiers.cache
import verifiers.cli
import verifiers.gates
import verifiers.io
import verifiers.report
import verifiers.schema


def test_all_is_pinned() -> None:
    assert_pinned(
        verifiers.io,
        [
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
        ],
    )
    assert_pinned(verifiers.cache, ["ResultCache", "default_cache_path"])
    assert_pinned(verifiers.cli, ["main", "run"])
    assert_pinned(verifiers.schema, ["SCHEMAS", "default_dir", "main", "render", "schema_for"])
    assert_pinned(verifiers.report, ["build_report", "write_report"])
    assert_pinned(
        verifiers.gates,
        [
            "CheckOutcome",
            "GatedScore",
            "gated_mean",
            "process_end",
            "read_left",
            "signal_name",
            "text_capped",
            "untrusted_error",
            "validate_gates",
        ],
    )


def test_cli_modules_stay_light() -> None:
    """Importing the CLI (what the console script does first) loads no heavy dependency."""
    heavy = ("pandas", "pyarrow", "matplotlib", "torch", "docker", "rich", "sympy")
    assert heavy_imports(["verifiers.cli", "verifiers.io", "verifiers.cache"], heavy) == []


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("verifiers ")
