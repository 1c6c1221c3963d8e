"""Worker process main loop (``python -m verifiers._process_main``); see
:mod:`verifiers.processes`.

Reads one JSON request per line on stdin, runs ``module:function(payload)``, writes one JSON
response per line on the *original* stdout. The target's own prints go to stderr, so nothing
it does can corrupt the protocol. JSON only: never pickle.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
from collections.abc import Callable
from typing import Any, TextIO

_functions: dict[str, Callable[[Any], Any]] = {}


def _resolve(target: str) -> Callable[[Any], Any]:
    fn = _functions.get(target)
    if fn is None:
        module_name, _, attr = target.partition(":")
        if not module_name or not attr:
            raise ValueError(f"worker target must be 'module:function', got {target!r}")
        fn = getattr(importlib.import_module(module_name), attr)
        _functions[target] = fn
    return fn


def _error(exc: Exception) -> dict[str, Any]:
    from verifiers.errors import VerifierError

    if isinstance(exc, MemoryError):
        return {"ok": False, "kind": "memory", "message": "ran out of memory in worker"}
    if isinstance(exc, VerifierError):
        return {"ok": False, "kind": exc.kind, "message": exc.message, "hint": exc.hint}
    return {"ok": False, "kind": "verifier", "message": f"{type(exc).__name__}: {exc}"}


def _set_memory(limit_mb: int | None) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = hard if limit_mb is None else limit_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def serve(inp: TextIO, out: TextIO) -> None:
    for line in inp:
        request = json.loads(line)
        try:
            _set_memory(request.get("memory_mb"))
            try:
                value = _resolve(request["target"])(request["payload"])
            finally:
                _set_memory(None)
            response: dict[str, Any] = {"ok": True, "value": value}
        except Exception as exc:
            response = _error(exc)
        try:
            text = json.dumps(response, allow_nan=True)
        except (TypeError, ValueError) as exc:
            text = json.dumps(_error(TypeError(f"worker result is not JSON: {exc}")))
        out.write(text + "\n")
        out.flush()


def main() -> None:
    protocol_fd = os.dup(1)
    os.dup2(2, 1)  # the target's prints land on stderr
    out = os.fdopen(protocol_fd, "w", encoding="utf-8")
    sys.stdout = sys.stderr
    serve(sys.stdin, out)


if __name__ == "__main__":
    main()
