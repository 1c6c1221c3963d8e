"""Judge-side rules that need no sandbox: the rebuilt-exception allowlist, the star-import
binding, the static test count that stands in for a module the candidate kept from collecting.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from verifiers.domains.code import _judge
from verifiers.domains.code._judge import _public_names, _static_test_count
from verifiers.domains.code._judge_candidate import (
    SAFE_EXCEPTIONS,
    CandidateError,
    _rebuild_exception,
)
from verifiers.domains.code._judge_record import JUDGE_MODULES

JUDGE_DIR = Path(_judge.__file__).parent

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


@pytest.mark.parametrize("module", [*JUDGE_MODULES, "_judge_boot"])
def test_judge_stays_stdlib_only(module: str) -> None:
    """The judge runs with the sandbox runtime's python: the standard library (and pytest for
    pytest tests) only; its modules import one another relatively (``_judge_boot``)."""
    source = (JUDGE_DIR / f"{module}.py").read_text()
    if module == "_judge_starvation":  # shipped as the runner's rule, cut from its file
        from verifiers.sandbox._runner import rule_source

        source = rule_source()
    tree = ast.parse(source)
    top = {
        (n.names[0].name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and not (isinstance(n, ast.ImportFrom) and n.level == 1 and n.module in JUDGE_MODULES)
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
        "marshal",
        "zlib",
        "pathlib",
        "functools",  # _judge_boot's host-side cache of the warm zygote's preload source
    }, top


def test_host_imports_only_the_codec_and_the_record() -> None:
    """Scoring imports the judge's codec and record modules, never the judge or the candidate
    side (they are shipped to the sandbox as compiled code, not imported)."""
    import subprocess
    import sys

    probe = (
        "import sys, verifiers.domains.code as c\n"
        "from verifiers.domains.code._languages import judge_files\n"
        "judge_files(c.language_for('python'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('verifiers.domains.code._judge')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split() == [
        "['verifiers.domains.code._judge_boot',",
        "'verifiers.domains.code._judge_codec',",
        "'verifiers.domains.code._judge_record']",
    ]
