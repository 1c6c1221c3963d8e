"""Starts the code judge in the sandbox: ``python3 .judge/boot.py`` (stdlib only).

Compiling the 1,000-line judge costs tens of milliseconds per sample; the host therefore ships
it precompiled (``harness.bin``: the host interpreter's magic number + zlib-compressed
marshalled code, written read-only before any candidate code exists). The boot loads that
when the magic matches this interpreter's and compiles the compressed source
(``harness.py.z``) otherwise (a different Python in the image).
"""

from __future__ import annotations


def boot() -> None:
    """Load and run the judge as ``__main__``."""
    import marshal
    import os
    import sys
    import zlib
    from importlib.util import MAGIC_NUMBER

    here = os.path.dirname(os.path.abspath(__file__))
    # Nothing may be imported from a directory the candidate could write to.
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here, os.getcwd())]
    code = None
    try:
        with open(os.path.join(here, "harness.bin"), "rb") as fh:
            blob = fh.read()
        if blob[: len(MAGIC_NUMBER)] == MAGIC_NUMBER:
            code = marshal.loads(zlib.decompress(blob[len(MAGIC_NUMBER) :]))
    except (OSError, ValueError, EOFError, TypeError, zlib.error):
        code = None
    if code is None:
        with open(os.path.join(here, "harness.py.z"), "rb") as fh:
            source = zlib.decompress(fh.read()).decode("utf-8")
        code = compile(source, ".judge/harness.py", "exec")
    # argv[0] stays this file: the judge re-runs it to start a fresh candidate process.
    namespace = {"__name__": "__main__", "__file__": __file__, "__builtins__": __builtins__}
    exec(code, namespace)  # noqa: S102 - the judge's own code, written read-only by the host


if __name__ == "__main__":
    boot()
