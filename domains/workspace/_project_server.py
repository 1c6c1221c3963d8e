"""The project process of a workspace test run (in the sandbox; untrusted once it imports).

Started by the trusted runner (``_pytest_run``) as ``python3 -I .verifiers/_project_server.py
candidate <rpc_in> <rpc_out>``, a fresh interpreter (never a fork of the runner, whose memory
holds the nonce), with stdin ``/dev/null`` and stdout/stderr on pipes the runner drains. It is
``code.tests``' candidate server (``_judge_candidate._candidate_main``, shipped as the package
``_vj``) serving one root module, ``_project_root``, through which the hidden tests reach the
agent's modules: ``getattr(root, "pkg.mod")`` imports ``pkg.mod`` from the tree here.

Two additions, passed to the server loop as its hooks (nothing here is trusted, so nothing
here needs defending): an exception's reply names its builtin base classes (so the runner
rebuilds ``class ParseError(ValueError)`` as the ``ValueError`` a test's
``pytest.raises(ValueError)`` expects), and stdout/stderr are flushed before every reply (so
the runner can hand what a call printed to the test's ``capsys`` in order).
"""

from __future__ import annotations

import os
import sys

# ``-I`` leaves the script's directory off the import path; the root module takes it off again.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _vj import _judge_candidate as _server  # type: ignore[import-not-found]


def _exc_with_bases(exc: BaseException, tb_lines: int = 8) -> dict[str, object]:
    info: dict[str, object] = _server._exc_info(exc, tb_lines)
    # One string: the runner keeps only str/bool fields of an exception reply.
    info["bases"] = ",".join(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")
    return info


def _flushed_write(fd: int, obj: object) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _server._write_msg(fd, obj)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] != "candidate":
        return 2
    _server._candidate_main(
        int(argv[2]), int(argv[3]), exc_info=_exc_with_bases, write_msg=_flushed_write
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
