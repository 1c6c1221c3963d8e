"""The ``verifiers`` console script: ``score``, ``list``, ``report``, ``sandbox``, ``serve``.

Exit codes: 0 when the command did its job (for ``score``: every input line got a result,
whatever its status); 1 when the tool could not run for a reason the user can fix (printed as
one line, with the fix when known, no traceback); 2 for command-line usage errors; 130 on
Ctrl-C. ``sandbox`` and ``serve`` pass their own exit codes through.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TextIO

from ..errors import VerifierError

__all__ = ["main", "run"]

_DELEGATES = {
    "sandbox": ("verifiers.sandbox.cli", "manage sandbox images and containers", "sandbox"),
    "serve": ("verifiers.rl_adapters.server", "run the HTTP reward server", "serve"),
}


class _ParserExit(Exception):
    """argparse wanted to exit (``--help`` or a usage error) with this status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that returns to :func:`main` instead of calling ``sys.exit``."""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        raise _ParserExit(status)


def _parser() -> argparse.ArgumentParser:
    from ._score import add_parser as add_score

    parser = _Parser(
        prog="verifiers",
        description="Score RL trajectories with pluggable verifiers.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_score(sub)

    p_list = sub.add_parser("list", help="list installed verifiers and sandbox backends")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")

    p_report = sub.add_parser("report", help="HTML report with plots from a scored file")
    p_report.add_argument("scored", type=Path, metavar="SCORED", help="a scored .jsonl file")
    p_report.add_argument("--html", type=Path, required=True, metavar="OUT", help="HTML to write")

    for name, (_module, help_text, _extra) in _DELEGATES.items():
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def _delegate(name: str, argv: list[str], stderr: TextIO) -> int:
    module_name, _help, extra = _DELEGATES[name]
    attr = "main"
    try:
        module = importlib.import_module(module_name)
        target: Callable[[list[str]], int | None] = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        print(
            f"verifiers {name}: not available ({exc}); install 'verifiers[{extra}]' "
            "or a version that ships it",
            file=stderr,
        )
        return 1
    code = target(argv)
    return int(code or 0)


def _list(as_json: bool, stdout: TextIO) -> int:
    from ..registry import get_verifier, installed_verifiers, plugin_problems

    names = installed_verifiers()
    problems = plugin_problems()
    verifiers = []
    for name in names:
        cls = get_verifier(name)
        doc = (cls.__doc__ or "").strip().splitlines()
        extra, missing = _extra_status(cls.__module__)
        verifiers.append(
            {
                "name": name,
                "version": str(cls.version),
                "module": cls.__module__,
                "summary": doc[0] if doc else "",
                "extra": extra,
                "missing": missing,
            }
        )
    sandboxes = _sandbox_backends()
    if as_json:
        doc_json = {"verifiers": verifiers, "plugin_problems": problems, "sandboxes": sandboxes}
        stdout.write(json.dumps(doc_json, indent=2) + "\n")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Terminal width on a terminal, else $COLUMNS or 80: the table wraps its summaries to fit.
    console = Console(file=stdout, highlight=False)
    table = Table(title="verifiers", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("v", no_wrap=True)
    table.add_column("needs", no_wrap=True)
    table.add_column("summary")
    for v in verifiers:
        needs = "core" if v["extra"] is None else f"[{v['extra']}]"
        if v["missing"]:
            needs += " MISSING"
        table.add_row(*(Text(str(cell)) for cell in (v["name"], v["version"], needs, v["summary"])))
    console.print(table)
    for v in verifiers:
        if v["missing"]:
            console.print(
                f"{v['name']}: needs {', '.join(v['missing'])}: "
                f"pip install 'verifiers[{v['extra']}]'",
                markup=False,
            )
    for plugin, reason in sorted(problems.items()):
        console.print(f"plugin {plugin!r} unavailable: {reason}")
    if sandboxes:
        backends = Table(title="sandbox backends", title_justify="left")
        backends.add_column("backend")
        backends.add_column("available")
        backends.add_column("detail")
        for entry in sandboxes:
            backends.add_row(
                str(entry["name"]), "yes" if entry["available"] else "no", str(entry["detail"])
            )
        console.print(backends)
    else:
        console.print("sandbox backends: verifiers.sandbox is not installed")
    return 0


def _extra_status(module: str) -> tuple[str | None, list[str]]:
    """The extra a built-in verifier's domain needs, and which of its distributions are absent.

    A domain ``verifiers.domains.<area>`` needs the extra ``[<area>]`` when the installed
    ``verifiers`` declares one (read from its metadata, so this follows pyproject.toml).
    Verifiers from other distributions or from the core need none that we know of.
    """
    import importlib.metadata as metadata
    import re

    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["verifiers", "domains"]:
        return None, []
    area = parts[2]
    try:
        requires = metadata.requires("verifiers") or []
    except metadata.PackageNotFoundError:
        return None, []
    wanted = []
    for requirement in requires:
        name, _, marker = requirement.partition(";")
        if re.search(rf"""extra\s*==\s*['"]{re.escape(area)}['"]""", marker):
            wanted.append(re.split(r"[<>=!~\[ ]", name.strip(), maxsplit=1)[0])
    if not wanted:
        return None, []
    missing = []
    for dist in wanted:
        try:
            metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            missing.append(dist)
    return area, missing


def _sandbox_backends() -> list[dict[str, object]]:
    """What ``verifiers.sandbox`` reports about its backends (empty when not importable).

    Uses ``backend_status()`` (``{name: (available, detail)}``) when the package offers it,
    else probes ``docker_ready()`` and ``detect_isolation()``.
    """
    try:
        sandbox = importlib.import_module("verifiers.sandbox")
    except Exception:
        return []
    probe = getattr(sandbox, "backend_status", None)
    if callable(probe):
        try:
            return [
                {"name": name, "available": bool(ok), "detail": str(detail)}
                for name, (ok, detail) in dict(probe()).items()
            ]
        except Exception as exc:
            return [{"name": "?", "available": False, "detail": f"probe failed: {exc}"}]
    entries: list[dict[str, object]] = []
    docker_ready = getattr(sandbox, "docker_ready", None)
    if callable(docker_ready):
        try:
            ok = bool(docker_ready())
            detail = "engine reachable, image built" if ok else "no engine or image not built"
        except Exception as exc:
            ok, detail = False, f"probe failed: {exc}"
        entries.append({"name": "docker", "available": ok, "detail": detail})
    detect = getattr(sandbox, "detect_isolation", None)
    if callable(detect):
        try:
            isolation = str(detect())
            entries.append(
                {"name": "local", "available": True, "detail": f"isolation: {isolation}"}
            )
        except Exception as exc:
            entries.append({"name": "local", "available": False, "detail": str(exc)})
    if hasattr(sandbox, "FakeProvider"):
        entries.append({"name": "fake", "available": True, "detail": "for tests"})
    return entries


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    stdout, stderr = sys.stdout, sys.stderr
    # Delegated verbs get their arguments untouched (argparse would eat --help).
    if args_list and args_list[0] in _DELEGATES:
        return _delegate(args_list[0], args_list[1:], stderr)
    parser = _parser()
    try:
        args = parser.parse_args(args_list)
    except _ParserExit as exc:  # --help, or a usage error already printed
        return exc.status
    args.argv = args_list  # for the `--resume` command printed after an interrupt
    if args.version:
        from .. import __version__

        print(f"verifiers {__version__}", file=stdout)
        return 0
    try:
        if args.command == "score":
            from ._score import run_score

            return run_score(args, stdout, stderr)
        if args.command == "list":
            return _list(args.json, stdout)
        if args.command == "report":
            from ..report import write_report

            write_report(args.scored, args.html)
            print(f"wrote {args.html}", file=stdout)
            return 0
    except VerifierError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        lines = exc.message.splitlines() or [""]
        lines[-1] += hint
        for line in lines:  # InvalidSettings: one line per invalid setting
            print(f"verifiers: error: {line}", file=stderr)
        return 1
    except KeyboardInterrupt:
        print("verifiers: interrupted", file=stderr)
        return 130
    parser.print_help(stdout)
    return 2


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
