"""`verifiers.__all__` is the public API: pinned here, resolvable, and cheap to import."""

from __future__ import annotations

from api_pins import assert_pinned, heavy_imports

import verifiers

PUBLIC = {
    "Artifact", "BadInput", "Check", "Engine", "EngineSettings", "Episode", "EpisodeSettings",
    "ErrorInfo", "ErrorKind", "Step", "SyncEpisode", "ToolRefused",
    "InfraError", "InlineVerifier", "InvalidOutput", "Message", "MissingDependency", "ResourceExhausted", "Result",
    "SandboxUnavailable", "Spec", "Status", "Task", "Trajectory", "UnknownVerifier", "Verifier",
    "VerifierContext", "VerifierError", "VerifierTimeout", "__version__", "completion_text",
    "get_verifier", "installed_verifiers", "last_code_block", "prompt_text", "register", "score",
    "score_async", "SyncEngine",
}  # fmt: skip


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert_pinned(verifiers, PUBLIC)


def test_the_static_imports_mirror_the_one_export_list() -> None:
    """``_EXPORTS`` is the one list; the TYPE_CHECKING block mirrors it for mypy (which cannot
    run ``__getattr__``), each name as an explicit ``X as X`` re-export from its module."""
    import ast
    from pathlib import Path

    source = Path(verifiers.__file__).read_text(encoding="utf-8")
    static: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                for alias in stmt.names:
                    assert alias.asname == alias.name, alias.name
                    static[alias.name] = stmt.module
    assert static == verifiers._EXPORTS
    assert sorted(verifiers.__all__) == sorted([*static, "__version__"])


def test_import_verifiers_loads_no_heavy_dependency() -> None:
    heavy = ("pydantic", "torch", "docker", "trimesh", "pandas", "bpy", "sympy", "numpy")
    assert heavy_imports(["verifiers"], heavy) == []


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        verifiers.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


CONTEXT_MEMBERS = {
    "account", "artifact_bytes", "artifact_path", "cleanup", "remaining", "resolve_path",
    "resources", "run_in_worker", "sandbox", "sandbox_provider", "starved",
}  # fmt: skip
"""``VerifierContext``'s public methods and properties (its attributes are documented in its
docstring): what a verifier may call, so a domain never reaches into ``ctx._...``."""


def test_verifier_context_members_are_pinned() -> None:
    from verifiers.context import VerifierContext

    public = {name for name in vars(VerifierContext) if not name.startswith("_")}
    assert public == CONTEXT_MEMBERS


def test_sandbox_provider_is_the_items_own_and_read_only() -> None:
    import time
    from pathlib import Path

    from verifiers.context import VerifierContext

    provider = object()
    ctx = VerifierContext(deadline=time.monotonic(), base_dir=Path("."), sandboxes=provider)  # type: ignore[arg-type]
    assert ctx.sandbox_provider is provider
    assert VerifierContext(deadline=0.0, base_dir=Path(".")).sandbox_provider is None
    try:
        ctx.sandbox_provider = None  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("sandbox_provider must be read-only")
    assert ctx.sandbox_provider is provider
