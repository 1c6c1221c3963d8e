"""Host-side pieces of code.workspace without a sandbox: diff application, file maps, tar
snapshots, strict comparisons, expected test ids."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from verifiers.domains.workspace import apply_diff, parse_changes, static_test_ids
from verifiers.domains.workspace._strict import HELPER_SOURCE, harden_test_source
from verifiers.domains.workspace._tree import parse_tar

from verifiers.errors import InvalidOutput

TREE = {"a.py": "one\ntwo\nthree\n", "b.py": "x\n"}


def test_diff_applies_with_offset_creates_and_deletes() -> None:
    diff = (
        "--- a/a.py\n+++ b/a.py\n@@ -5,2 +5,2 @@\n two\n-three\n+THREE\n"
        "--- /dev/null\n+++ b/new/c.py\n@@ -0,0 +1,2 @@\n+c1\n+c2\n"
        "--- a/b.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert apply_diff(diff, TREE) == {
        "a.py": "one\ntwo\nTHREE\n",
        "new/c.py": "c1\nc2\n",
        "b.py": None,
    }


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        ("--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-nope\n+yes\n", "does not apply"),
        ("--- a/zz.py\n+++ b/zz.py\n@@ -1 +1 @@\n-a\n+b\n", "does not exist"),
        ("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "leaves the workspace"),
        ("--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+dup\n", "already exists"),
        ("--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n one\n", "truncated"),
        (
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n",
            "symlink",
        ),
    ],
)
def test_bad_diffs_are_the_models_fail(diff: str, message: str) -> None:
    with pytest.raises(InvalidOutput, match=message):
        apply_diff(diff, TREE)


def test_file_maps() -> None:
    assert parse_changes('{"files": {"a.py": "new", "b.py": null}}', TREE) == (
        {"a.py": "new", "b.py": None},
        "files",
    )
    for bad in (
        '{"/abs": "x"}',
        '{"a/../../x": "x"}',
        '{".verifiers/x": "x"}',
        '{"a": 3}',
        "[1]",
        "{nope",
    ):
        with pytest.raises(InvalidOutput):
            parse_changes(bad, TREE)
    with pytest.raises(InvalidOutput, match="neither a unified diff"):
        parse_changes("all tests pass, trust me", TREE)


def test_tar_snapshot_keeps_regular_text_files_only() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (
            ("./ok.py", b"x = 1\n"),
            ("./.tmp/scratch", b"s"),
            ("./bin.dat", b"\xff\xfe"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./tests/test_x.py")
        link.type = tarfile.SYMTYPE
        link.linkname = "../ok.py"
        tar.addfile(link)
    files, dropped = parse_tar(buf.getvalue())
    assert files == {"ok.py": "x = 1\n"}
    assert any("tests/test_x.py" in d for d in dropped) and any("bin.dat" in d for d in dropped)


def test_strict_comparisons_reject_lookalikes() -> None:
    namespace: dict[str, object] = {}
    exec(compile(HELPER_SOURCE, "strict", "exec"), namespace)  # trusted helper source
    strict_eq = namespace["strict_eq"]

    class Yes(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    assert strict_eq(5, 5) and strict_eq(5.0, 5) and strict_eq([1, (2, "a")], [1, (2, "a")])  # type: ignore[operator]
    assert not strict_eq(Yes(4), 5) and not strict_eq(True, 1) and not strict_eq([Yes(1)], [1])  # type: ignore[operator]
    hardened = harden_test_source(
        "def test_x():\n    assert f(1) == 5\n    assert g() != 'a'\n    assert h() == k()\n"
    )
    assert "__verifiers_strict_eq__(f(1), 5)" in hardened
    assert "not __verifiers_strict_eq__(g(), 'a')" in hardened
    assert "h() == k()" in hardened


def test_static_test_ids() -> None:
    source = "def test_a():\n    pass\n\nclass TestB:\n    def test_c(self):\n        pass\n\ndef helper():\n    pass\n"
    assert static_test_ids({"t/test_x.py": source, "t/data.txt": "x"}) == [
        "t/test_x.py::test_a",
        "t/test_x.py::TestB::test_c",
    ]


def test_the_runner_uses_only_what_the_candidate_module_has() -> None:
    """The workspace runner and project server are built on ``code.tests``' candidate module
    (shipped as ``_vj``): every name they take from it must exist there, and the two hooks they
    pass (``proxy`` on the trusted side, ``exc_info``/``write_msg`` in the project process) must
    be hooks of it. A rename there fails here, not only when the workspace corpus runs."""
    import ast
    import inspect
    from pathlib import Path

    from verifiers.domains.code import _judge_candidate as jc
    from verifiers.domains.workspace import _pytest_run

    here = Path(str(_pytest_run.__file__)).parent  # _project_server imports ``_vj``: read only
    for name, alias in (("_pytest_run.py", "jc"), ("_project_server.py", "_server")):
        tree = ast.parse((here / name).read_text(encoding="utf-8"))
        used = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == alias
        }
        assert used, (name, alias)
        assert not [n for n in sorted(used) if not hasattr(jc, n)], name
    hooks = inspect.signature(jc._candidate_main).parameters
    assert {"exc_info", "write_msg"} <= {n for n, p in hooks.items() if p.kind is p.KEYWORD_ONLY}
    assert "proxy" in vars(jc.Candidate)
    assert "proxy" in vars(_pytest_run._candidate_class(jc))


def test_the_shipped_candidate_package_has_what_it_imports(tmp_path: Path) -> None:
    """The ``_vj`` package written to ``.verifiers/`` holds every module its candidate
    machinery imports, and its clocks work there whether or not the sandbox names a CPU
    account.

    The code judge's starvation rule moved into ``_judge_candidate`` (``Clock``/``Patience``
    import ``._judge_starvation`` on first use, only where ``VERIFIERS_JOB_CPU`` is set): a
    ``_vj`` without it failed every project import in the sandbox, so honest workspace fixes
    scored 0 (tests/episodes/test_ors.py). This runs the shipped files as they land there."""
    import ast
    import os
    import subprocess
    import sys

    from verifiers.domains.workspace._tree import RESERVED_DIR
    from verifiers.domains.workspace._verifier import runner_files

    files = runner_files()
    package = f"{RESERVED_DIR}/_vj/"
    shipped = {Path(p).stem for p in files if p.startswith(package)}
    for name in sorted(shipped - {"__init__"}):
        tree = ast.parse(files[f"{package}{name}.py"])
        wanted = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        }
        assert not wanted - shipped, (name, sorted(wanted - shipped))
    for path, text in files.items():
        dest = tmp_path / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    probe = (
        "import sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import _vj._judge_candidate as jc\n"
        "clock = jc.Clock(0.0, jc.exec_end(5.0))\n"
        "counted = sys.argv[2] == 'counted'\n"
        "assert (clock.patience.window is not None) == counted\n"
        "assert clock.expired()\n"  # no grace past a zero limit, starved or not
        "print('ok')\n"
    )
    for counting in ("pids", ""):  # the runner's two ways: count pids, or no account
        out = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                probe,
                str(tmp_path / RESERVED_DIR),
                "counted" if counting else "-",
            ],
            env={**os.environ, "VERIFIERS_JOB_CPU": counting},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0 and out.stdout.strip() == "ok", (counting, out.stderr[-2000:])
