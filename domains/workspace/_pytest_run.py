"""Runs a workspace's hidden pytest files inside the sandbox (stdlib + pytest; trusted).

Written read-only to ``.verifiers/`` of a fresh verification sandbox *after* the agent's files
and run as ``python3 -I .verifiers/_pytest_run.py`` (isolated mode: no ``PYTHON*`` variables,
no user site, neither the script's nor the work directory at the front of ``sys.path``). The
job (nonce, test files) arrives on stdin and is never on disk where the project could read it
before the tests run.

Guards, each against a hack the corpus holds: ``--noconftest`` (a ``conftest.py`` that forges
reports), ``-c`` our own ini and ``-o addopts=`` (a ``pytest.ini``/``setup.cfg``/``tox.ini``
that deselects or adds plugins), ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` (entry-point plugins),
``--import-mode=importlib`` with the tree *appended* to ``sys.path`` (a ``pluggy.py`` or
``json.py`` in the tree shadows nothing the runner imports), verdicts written as one
nonce-signed line to a private duplicate of stdout while fds 1 and 2 go to ``/dev/null`` (a
project or test that prints ``PASSED`` lines forges nothing), and a test counts only when its
``call`` phase passed and no phase failed or skipped.

Known limit: the project's code runs in this interpreter (tests import it), so code that
patches pytest's internals at import time could still forge a verdict. code.tests' judge keeps
candidate and tests in separate processes; a multi-module project cannot be proxied that way.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    job = json.loads(sys.stdin.buffer.read())
    nonce = str(job["nonce"])
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    tree = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", tree)]
    sys.path.insert(0, os.path.join(tree, ".verifiers"))  # the strict-compare helper
    sys.path.append(tree)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.dont_write_bytecode = True

    def emit(payload: dict[str, object]) -> None:
        os.write(out_fd, (nonce + " " + json.dumps(payload) + "\n").encode())

    emit({"ready": True})  # before any code of the project can run: it started, as the judge
    try:
        import pytest
    except Exception as exc:
        emit({"infra_error": f"pytest is not importable: {exc!r}"[:300]})
        return 0

    # pytest imported (trusted: the tree is at the end of sys.path): from here on the
    # project's code runs in this interpreter, and the judge honours no infra_error line
    # after this one (project code that forged one would turn its 0 into an abstain).
    emit({"started": True})
    results: dict[str, dict[str, str]] = {}

    class Report:
        def pytest_runtest_logreport(self, report: object) -> None:
            nodeid = str(getattr(report, "nodeid", ""))
            when = str(getattr(report, "when", ""))
            rec = results.setdefault(nodeid, {"status": "failed", "message": "did not run"})
            if getattr(report, "failed", False):
                crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
                message = str(getattr(crash, "message", "") or getattr(report, "longrepr", ""))
                rec.update(status="failed", message=f"{when}: {message}"[:400], done="1")
            elif getattr(report, "skipped", False) and rec.get("done") != "1":
                rec.update(status="failed", message="skipped", done="1")
            elif when == "call" and rec.get("done") != "1":
                rec.update(status="passed", message="")

        def pytest_collectreport(self, report: object) -> None:
            if getattr(report, "failed", False):
                results.setdefault(str(getattr(report, "nodeid", "")), {}).update(
                    status="failed",
                    message=("collection failed: " + str(getattr(report, "longrepr", "")))[-400:],
                    done="1",
                )

    ini = os.path.join(tree, ".verifiers", "pytest.ini")
    args = [
        *[str(p) for p in job["files"]],
        "-q",
        "-c",
        ini,
        "--rootdir",
        tree,
        "-p",
        "no:cacheprovider",
        "--noconftest",
        "--import-mode=importlib",
        "--continue-on-collection-errors",
        "-o",
        "addopts=",
        "-o",
        "python_files=*.py",
        "--tb=line",
        "--capture=fd",
    ]
    try:
        pytest.main(args, plugins=[Report()])
    except (Exception, SystemExit) as exc:  # the project exited or broke pytest: still a verdict
        emit({"crashed": f"{type(exc).__name__}: {exc}"[:300], "results": results})
        return 0
    emit({"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
