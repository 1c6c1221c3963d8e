"""Docs that run: every code block in README.md, CONTRIBUTING.md and docs/**/*.md is executed.

A block is run according to its fence language, in document order, in one temporary directory
per document (so later blocks see the files earlier ones wrote), with a copy of ``datasets/``
there for the relative paths the docs use:

- ``python``: ``python -`` (the block on stdin) in a temporary venv made with
  ``--system-site-packages`` over this checkout's environment;
- ``bash`` / ``sh``: ``bash -euo pipefail`` in the same venv (``pip`` installs into it); a
  leading ``pip install . && `` (the README's first command) is dropped, as the checkout is
  installed there already;
- ``json``: must parse as one JSON document, or as JSON Lines (every line an object), so what
  the docs show can be pasted into a JSONL file; ``toml``: must parse.

Two HTML comments on the line right before a fence change that:

- ``<!-- not-run: REASON -->``: shown, not run (a transcript, a fragment, a command that
  installs system packages or runs forever). The reason is required.
- ``<!-- file: PATH -->``: written to PATH (relative) instead of run; how docs/plugins.md's
  plugin becomes a real package that a later block ``pip install``s and scores with.

Fences without a language and ``console`` transcripts are output, never run. docs/adapters.md
is tested by its owner (tests/rl_adapters); it is left out here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP_FILES = {"docs/adapters.md"}
RUN = {"python", "bash", "sh"}
PARSE = {"json", "toml"}
OUTPUT = {"", "console", "text", "diff"}
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")
FILE = re.compile(r"^\s*<!--\s*file:\s*(\S+?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")

MARKS: dict[str, list[str]] = {
    # documents whose blocks run model code in a sandbox (auto: Docker, else bubblewrap)
    "README.md": ["bwrap"],
    "docs/code.md": ["bwrap"],
}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    body: str
    not_run: str | None
    file: str | None


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the marker comment before each."""
    rel = str(doc.relative_to(REPO))
    lines = doc.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match.group(1), match.group(2), match.group(3).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(
            rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]
        ):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        assert i < len(lines), f"{rel}:{start + 1}: unterminated code fence"
        i += 1
        before = lines[start - 1] if start > 0 else ""
        not_run = NOT_RUN.match(before)
        file = FILE.match(before)
        assert not (re.search(r"<!--\s*not-run\s*-->|<!--\s*not-run:\s*-->", before)), (
            f"{rel}:{start}: a not-run marker needs a reason"
        )
        out.append(
            Block(
                rel,
                start + 1,
                lang,
                "\n".join(body) + "\n",
                not_run.group(1) if not_run else None,
                file.group(1) if file else None,
            )
        )
    return out


def documents() -> list[str]:
    found = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [
        str(p.relative_to(REPO))
        for p in found
        if p.is_file() and str(p.relative_to(REPO)) not in SKIP_FILES
    ]


def _params() -> list[object]:
    return [
        pytest.param(doc, marks=[getattr(pytest.mark, m) for m in MARKS.get(doc, [])], id=doc)
        for doc in documents()
    ]


@pytest.fixture(scope="module")
def doc_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv over this environment (``--system-site-packages`` plus this venv's own
    site-packages, where the editable ``verifiers`` lives), with ``pip`` and the ``verifiers``
    script, so a doc's ``pip install`` goes into it and its plugins are seen by the CLI."""
    root = tmp_path_factory.mktemp("docvenv") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)],
        check=True,
        timeout=120,
    )
    here = sysconfig.get_paths()["purelib"]
    target = Path(
        subprocess.check_output(
            [
                str(root / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    (target / "_verifiers_docs_parent.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    pip = root / "bin" / "pip"
    pip.write_text(
        f'#!/bin/sh\nexec {sys.executable} -m pip --python {root / "bin" / "python"} "$@"\n'
    )
    script = root / "bin" / "verifiers"
    script.write_text(
        f"#!{root / 'bin' / 'python'}\nimport sys\nfrom verifiers.cli import run\nsys.exit(run())\n"
    )
    for path in (pip, script):
        path.chmod(0o755)
    return root


INSTALL_THIS = "pip install . && "


def _installed(block: Block) -> Block:
    """A block that starts by installing this checkout (``pip install . && ...``, the README's
    first command) runs its rest: the docs venv already has the checkout installed, and the
    block runs in a temporary directory, where ``.`` is not the project."""
    if block.lang in ("bash", "sh") and block.body.startswith(INSTALL_THIS):
        return replace(block, body=block.body[len(INSTALL_THIS) :])
    return block


def _run(block: Block, cwd: Path, venv: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "VERIFIERS_CACHE_DIR": str(cwd / ".cache"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INDEX": "1",
    }
    env.pop("PYTHONPATH", None)
    if block.lang == "python":
        argv = [str(venv / "bin" / "python"), "-"]
    else:
        argv = ["bash", "-euo", "pipefail", "-s"]
    proc = subprocess.run(
        argv, input=block.body, capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )
    assert proc.returncode == 0, (
        f"{block.doc}:{block.line}: the {block.lang} block exited {proc.returncode}\n"
        f"--- block ---\n{block.body}--- stderr ---\n{proc.stderr[-3000:]}\n--- stdout ---\n{proc.stdout[-1500:]}"
    )


def _parse(block: Block) -> None:
    where = f"{block.doc}:{block.line}"
    if block.lang == "toml":
        try:
            tomllib.loads(block.body)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"{where}: not valid TOML ({exc}); fix it or mark it <!-- not-run: why -->")
        return
    try:
        json.loads(block.body)
        return
    except ValueError:
        pass
    for n, line in enumerate(block.body.splitlines(), start=block.line + 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            pytest.fail(
                f"{block.doc}:{n}: a json block must be one JSON document or JSON Lines ({exc}); "
                "fix it or mark it <!-- not-run: why -->"
            )
        assert isinstance(value, dict), f"{block.doc}:{n}: a JSON Lines line must be an object"


@pytest.mark.parametrize("doc", _params())
def test_doc_blocks_run(doc: str, doc_venv: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    for block in blocks(REPO / doc):
        if block.not_run is not None:
            continue
        if block.file is not None:
            path = tmp_path / block.file
            assert tmp_path in path.resolve().parents, (
                f"{block.doc}:{block.line}: file outside the doc's directory"
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body)
            continue
        if block.lang in RUN:
            _run(_installed(block), tmp_path, doc_venv)
        elif block.lang in PARSE:
            _parse(block)
        else:
            assert block.lang in OUTPUT, (
                f"{block.doc}:{block.line}: unknown fence language {block.lang!r}"
            )


def test_markers_are_parsed() -> None:
    text = "\n".join(
        [
            "<!-- not-run: a fragment -->",
            "```python",
            "x",
            "```",
            "<!-- file: a/b.py -->",
            "  ```py",
            "  y",
            "  ```",
            "```json",
            "{}",
            "```",
        ]
    )
    doc = REPO / "tests" / "docs" / ".markers.md"
    doc.write_text(text)
    try:
        found = blocks(doc)
    finally:
        doc.unlink()
    assert [(b.lang, b.not_run, b.file, b.body) for b in found] == [
        ("python", "a fragment", None, "x\n"),
        ("py", None, "a/b.py", "y\n"),
        ("json", None, None, "{}\n"),
    ]
