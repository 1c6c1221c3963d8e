"""Ships the code judge to the sandbox and starts it there: ``python3 .judge/boot.py``.

The judge is four stdlib-only modules (``_judge_record.JUDGE_MODULES``: codec, record,
candidate, judge). Compiling them costs tens of milliseconds per sample, so the host ships them
precompiled in one file, ``harness.bin``: this interpreter's magic number + the marshalled
``(package, ((module, code), ...))``, written read-only before any candidate code exists. The
boot (run as a script in the sandbox) loads that when the magic matches the sandbox
interpreter's and compiles the compressed sources (``harness.py.z``, JSON) otherwise (a
different Python in the image).

Every step here is paid once per sample, inside the sandbox, so the shipped files are cut to
what the judge's start needs (measured in the container, ``docs/benchmarks/humaneval.md``):
``harness.bin`` is not compressed (``zlib.decompress`` of its 145 KB cost ~0.9 ms of CPU per
sample; the file travels to a runner once and is kept there by hash, so its size costs no
transfer per sample), and ``boot.py`` is only the :func:`boot` function, without this module's
docstrings or :func:`pack` (the runner compiles the script on every start: 0.63 ms for this
whole file, a fifth of that for the function alone). Every module is compiled under one file name
(``_judge_record.JUDGE_FILE``), which the feedback's tracebacks leave out, and registered under
its host name (``verifiers.domains.code._judge_codec`` ...) so the modules' relative imports
resolve to one another, never to a file: nothing is imported from a directory the candidate
could write to.
The last module, ``_judge``, runs as ``__main__``.

:func:`pack` is the host's half (called by ``_languages.judge_files``); :func:`boot` the
sandbox's.

**Warm start** (:func:`preload_source`). The host also hands each judge ``exec`` the source of
:func:`preload` with ``harness.bin``'s bytes in it, as the exec's ``preload``: the sandbox
runner runs it once in a fork of its zygote (a *warm zygote*, ``sandbox/_runner.py``
``Runner.warm_zygote``; before any job data exists, like the zygote itself) and forks every
judge of that runner from there. The boot then finds the three library modules loaded and
runs the judge's ``__main__`` from the same bundle, after checking that ``harness.bin`` on
disk is byte for byte the preloaded one (otherwise it loads the file as always). A judge is
still one process per sample, forked from a process that never held a job, and it still forks
its candidate before reading its job: only the unmarshalling and the module bodies (CPU per
sample, ``docs/benchmarks/humaneval.md``) are no longer paid per sample.
"""

from __future__ import annotations

from functools import cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def pack(sources: dict[str, Path], texts: dict[str, str] | None = None) -> dict[str, bytes]:
    """The judge's files for the sandbox from ``{".judge/<name>.py": source path}``.

    ``.judge/boot.py`` is this file's :func:`boot` and its call (:func:`boot_script`); the
    other entries are the judge's modules in load order. ``texts``: a module's source by name
    instead of its file's (``_judge_starvation``: the runner's rule, cut from its file).
    """
    texts = texts or {}
    import importlib.util
    import json
    import marshal
    import zlib

    modules = [
        (name, texts[name] if name in texts else path.read_text(encoding="utf-8"))
        for dest, path in sources.items()
        if dest != ".judge/boot.py"
        for name in [dest.rsplit("/", 1)[-1][: -len(".py")]]
    ]
    from ._judge_record import JUDGE_FILE

    codes = tuple(
        (name, compile(text, JUDGE_FILE, "exec", dont_inherit=True)) for name, text in modules
    )
    package = str(__package__)
    return {
        ".judge/boot.py": boot_script(sources[".judge/boot.py"]),
        ".judge/harness.bin": importlib.util.MAGIC_NUMBER + marshal.dumps((package, codes)),
        ".judge/harness.py.z": zlib.compress(
            json.dumps([package, JUDGE_FILE, modules]).encode("utf-8"), 9
        ),
    }


PRELOADED = "__verifiers_judge_preload__"
"""The ``sys.modules`` key under which :func:`preload` leaves the bundle for :func:`boot`."""


@cache
def preload_source(harness: bytes) -> bytes:
    """The warm zygote's preload for ``harness`` (``harness.bin``'s bytes): :func:`preload`
    and its call on those bytes, as Python source (see the module docstring)."""
    import ast
    import base64
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "preload"]
    function.returns = None
    for arg in function.args.args:
        arg.annotation = None
    blob = base64.b64encode(harness).decode("ascii")
    call = ast.parse(f"import binascii\npreload(binascii.a2b_base64({blob!r}))\n").body
    return (ast.unparse(ast.Module(body=[function, *call], type_ignores=[])) + "\n").encode()


def preload(blob: bytes) -> None:
    """In a warm zygote: load the bundle's library modules and keep the bundle for the boot.

    The modules' bodies only define names (no job exists yet, nothing is read from a file);
    their state is what every judge's boot would build itself.
    """
    import marshal
    import sys
    from importlib.util import MAGIC_NUMBER

    if blob[: len(MAGIC_NUMBER)] != MAGIC_NUMBER:
        return  # another Python: every judge loads its sources itself
    package, codes = marshal.loads(memoryview(blob)[len(MAGIC_NUMBER) :])
    *libraries, (_, main) = codes
    modules = []
    for name, code in libraries:
        module = type(sys)(f"{package}.{name}")
        module.__package__ = package
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)  # noqa: S102 - the judge's own code, from the host
        modules.append(module)
    kept = type(sys)("__verifiers_judge_preload__")
    kept.__dict__.update(blob=blob, package=package, main=main, modules=tuple(modules))
    sys.modules[kept.__name__] = kept


def boot_script(path: Path) -> bytes:
    """The sandbox's ``boot.py``: :func:`boot` from ``path`` (this file), no docstring, and its
    call: the one piece of the judge the runner compiles on every start."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "boot"]
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        function.body = body[1:]
    function.returns = None
    call = ast.parse("boot()\n").body
    return (ast.unparse(ast.Module(body=[function, *call], type_ignores=[])) + "\n").encode()


def boot() -> None:
    """Load the judge's modules and run the last one as ``__main__``."""
    import resource

    started = resource.getrusage(resource.RUSAGE_SELF)  # the judge's phases (D line "usage")
    import marshal
    import os
    import sys
    from importlib.util import MAGIC_NUMBER

    here = os.path.dirname(os.path.abspath(__file__))
    # Nothing may be imported from a directory the candidate could write to.
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here, os.getcwd())]
    bundle = None
    kept = sys.modules.get("__verifiers_judge_preload__")  # a warm zygote's (see preload)
    try:
        with open(os.path.join(here, "harness.bin"), "rb") as fh:
            blob = fh.read()
        if kept is None or kept.blob != blob:
            kept = None
            if blob[: len(MAGIC_NUMBER)] == MAGIC_NUMBER:
                bundle = marshal.loads(memoryview(blob)[len(MAGIC_NUMBER) :])
    except (OSError, ValueError, EOFError, TypeError):
        kept = bundle = None
    if kept is not None:  # the libraries are loaded already: only __main__ runs
        package, main = kept.package, kept.main
    else:
        if bundle is None:
            import json
            import zlib

            with open(os.path.join(here, "harness.py.z"), "rb") as fh:
                package, filename, sources = json.loads(zlib.decompress(fh.read()).decode("utf-8"))
            bundle = (package, [(n, compile(text, filename, "exec")) for n, text in sources])
        package, codes = bundle
        *libraries, (_, main) = codes
        for name, code in libraries:
            module = type(sys)(f"{package}.{name}")
            module.__package__ = package
            sys.modules[module.__name__] = module
            exec(code, module.__dict__)  # noqa: S102 - the judge's own code, written read-only by the host
    # argv[0] stays this file: the judge re-runs it to start a fresh candidate process.
    namespace = {
        "__name__": "__main__",
        "__file__": __file__,
        "__package__": package,
        "__builtins__": __builtins__,
        "__boot_cpu__": started.ru_utime + started.ru_stime,
    }
    exec(main, namespace)  # noqa: S102 - the judge's own code, written read-only by the host


if __name__ == "__main__":
    boot()
