"""Judge-side rules that need no sandbox: the rebuilt-exception allowlist, the star-import
binding, the static test count that stands in for a module the candidate kept from collecting.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from verifiers.domains.code import _harness
from verifiers.domains.code._harness import (
    SAFE_EXCEPTIONS,
    CandidateError,
    _public_names,
    _rebuild_exception,
    _static_test_count,
)

CONTROL_FLOW = [
    "StopIteration",
    "StopAsyncIteration",
    "GeneratorExit",
    "KeyboardInterrupt",
    "SystemExit",
]


@pytest.mark.parametrize("name", CONTROL_FLOW)
def test_control_flow_exceptions_are_never_rebuilt(name: str) -> None:
    err = CandidateError("raised", {"type": name, "builtin": True, "message": ""})
    assert _rebuild_exception(err) is err


def test_safe_set_is_builtin_exceptions_only() -> None:
    for name in SAFE_EXCEPTIONS:
        cls = getattr(builtins, name)
        assert issubclass(cls, Exception) and not issubclass(
            cls, (StopIteration, StopAsyncIteration)
        )
    rebuilt = _rebuild_exception(CandidateError("raised", {"type": "ValueError", "message": "m"}))
    assert type(rebuilt) is ValueError and str(rebuilt) == "m"
    # Death is never rebuilt, even when the frame names a safe exception.
    dead = CandidateError("dead", {"type": "ValueError", "message": ""})
    assert _rebuild_exception(dead) is dead


def test_public_names_are_read_from_source(tmp_path: Path) -> None:
    src = tmp_path / "solution.py"
    src.write_text(
        "import math\nabs = lambda x: 0\ndef f(): ...\nclass K: ...\ndef _hidden(): ...\n"
        "try:\n    def g(): ...\nexcept ImportError:\n    def g(): ...\nif True:\n    class H: ...\n"
    )
    assert _public_names(str(src)) == ["f", "K", "g", "H"]
    (tmp_path / "bad.py").write_text("(" * 5000)
    assert _public_names(str(tmp_path / "bad.py")) == []


def test_static_test_count_is_a_lower_bound() -> None:
    tree = ast.parse(
        "import pytest\n"
        "def test_a(): ...\n"
        "@pytest.mark.parametrize('x', [1, 2, 3])\ndef test_b(x): ...\n"
        "@pytest.mark.parametrize('x', CASES)\ndef test_c(x): ...\n"
        "def helper(): ...\n"
        "class TestK:\n    def test_m(self): ...\n    def other(self): ...\n"
    )
    assert _static_test_count(tree) == 1 + 3 + 1 + 1


def test_harness_stays_stdlib_only() -> None:
    tree = ast.parse(Path(_harness.__file__).read_text())
    top = {
        (n.names[0].name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }
    assert top <= {
        "__future__",
        "json",
        "math",
        "os",
        "select",
        "signal",
        "struct",
        "sys",
        "time",
        "types",
        "typing",
        "collections",
        "importlib",
        "resource",
        "traceback",
        "subprocess",
        "base64",
        "ctypes",
        "linecache",
        "tempfile",
        "pytest",
        "_pytest",
        "ast",
        "copy",
        "builtins",
        "shutil",
    }, top
