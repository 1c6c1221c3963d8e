"""The SQLite result cache: key recipe, round trips, several processes writing at once."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest

from verifiers import (
    Engine,
    EngineSettings,
    InfraError,
    Result,
    Spec,
    Trajectory,
    Verifier,
    VerifierContext,
    register,
)
from verifiers.cache import ResultCache, default_cache_path


class CountSpec(Spec):
    threshold: int = 0


@register("test.cache_count")
class CountingVerifier(Verifier[CountSpec]):
    """Counts its calls so tests can tell cache hits from real verification."""

    Spec = CountSpec
    calls: ClassVar[int] = 0

    async def verify(self, trajectory: Trajectory, spec: CountSpec, ctx: VerifierContext) -> Result:
        type(self).calls += 1
        text = str(trajectory.completion)
        if text == "boom":
            raise InfraError("flaky backend")
        return Result.scored(1.0 if len(text) > spec.threshold else 0.0, feedback=text)


class PromptVerifier(CountingVerifier):
    uses_prompt = True


def traj(completion: str = "abc", **task: object) -> Trajectory:
    return Trajectory.model_validate(
        {
            "id": "t",
            "prompt": "p",
            "completion": completion,
            "task": {"verifier": "test.cache_count", **task},
        }
    )


def test_default_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VERIFIERS_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "results.sqlite"
    monkeypatch.delenv("VERIFIERS_CACHE_DIR")
    assert default_cache_path() == Path.home() / ".cache" / "verifiers" / "results.sqlite"


def test_key_depends_on_exactly_what_a_verdict_depends_on(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "c.sqlite")
    spec = CountSpec()
    base = cache.key_for(CountingVerifier, spec, traj(), tmp_path)
    assert base == cache.key_for(CountingVerifier, CountSpec(), traj(), tmp_path)
    assert len(base) == 64
    different = {
        "spec": cache.key_for(CountingVerifier, CountSpec(threshold=1), traj(), tmp_path),
        "completion": cache.key_for(CountingVerifier, spec, traj("abd"), tmp_path),
        "reference": cache.key_for(CountingVerifier, spec, traj(reference="r"), tmp_path),
        "prompt_sensitive": cache.key_for(PromptVerifier, spec, traj(), tmp_path),
    }
    assert base not in different.values()
    assert len(set(different.values())) == len(different)
    # the id, the metadata and (for prompt-blind verifiers) the prompt do not matter
    other = traj().model_copy(update={"id": "zzz", "prompt": "other", "metadata": {"m": 1}})
    assert cache.key_for(CountingVerifier, spec, other, tmp_path) == base
    assert cache.key_for(PromptVerifier, spec, other, tmp_path) != different["prompt_sensitive"]
    # a chat completion never collides with its text
    chat = Trajectory.model_validate(
        {
            "completion": [{"role": "assistant", "content": "abc"}],
            "task": {"verifier": "test.cache_count"},
        }
    )
    assert cache.key_for(CountingVerifier, spec, chat, tmp_path) != base
    cache.close()


def test_key_hashes_artifact_content(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "c.sqlite")
    (tmp_path / "out.stl").write_bytes(b"solid a")
    with_file = Trajectory.model_validate(
        {**traj().model_dump(), "artifacts": {"mesh": {"path": "out.stl"}}}
    )
    first = cache.key_for(CountingVerifier, CountSpec(), with_file, tmp_path)
    (tmp_path / "out.stl").write_bytes(b"solid b")
    second = cache.key_for(CountingVerifier, CountSpec(), with_file, tmp_path)
    assert first != second
    inline = Trajectory.model_validate(
        {**traj().model_dump(), "artifacts": {"mesh": {"base64": base64.b64encode(b"x").decode()}}}
    )
    assert cache.key_for(CountingVerifier, CountSpec(), inline, tmp_path) not in (first, second)
    escaping = Trajectory.model_validate(
        {**traj().model_dump(), "artifacts": {"mesh": {"path": "../../etc/passwd"}}}
    )
    cache.key_for(CountingVerifier, CountSpec(), escaping, tmp_path)  # no read outside base
    cache.close()


def test_put_get_round_trip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.sqlite"
    cache = ResultCache(path, batch=1000, flush_s=3600)
    verdict = Result.failed("wrong", reward=0.5, components={"a": 0.5}).model_copy(
        update={"id": "x", "verifier": "v@1"}
    )
    cache.put("k1", verdict)
    got = cache.get("k1")  # served from the uncommitted batch
    # Stored and returned as put, less its id; marking a hit ``cached`` is the engine's stamp.
    assert got is not None and not got.cached and got.reward == 0.5 and got.id is None
    assert got.model_copy(update={"id": "x"}) == verdict
    cache.put("k2", Result.errored("infra", "down"))  # errors are never stored
    assert cache.get("k2") is None
    cache.put("k3", Result.skip("n/a"))
    cache.close()
    reopened = ResultCache(path)
    assert reopened.get("k1") is not None
    assert reopened.get("k3") is not None and reopened.get("k3").status == "skipped"  # type: ignore[union-attr]
    assert reopened.get("missing") is None
    assert len(reopened) == 2
    reopened.close()


def test_unusable_database_raises_infra_error_with_hint(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(InfraError) as info:
        ResultCache(path)
    assert info.value.hint is not None and "--no-cache" in info.value.hint


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from verifiers import Result
    from verifiers.cache import ResultCache

    path, worker, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cache = ResultCache(path, batch=int(sys.argv[4]))
    for i in range(n):
        # half the keys are shared by every writer, half are private
        key = f"shared-{i}" if i % 2 else f"w{worker}-{i}"
        cache.put(key, Result.scored(float(i % 2), feedback=f"w{worker}"))
        if i % 50 == 0:
            assert cache.get(key) is not None
    cache.close()
    print("ok")
    """
)


@pytest.mark.parametrize("batch", [1, 64])
def test_several_processes_write_at_once(tmp_path: Path, batch: int) -> None:
    path = tmp_path / "shared.sqlite"
    n, writers = 400, 4
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(w), str(n), str(batch)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "ok"
        assert "disabled after error" not in err
    cache = ResultCache(path)
    private = writers * (n // 2)
    shared = n // 2
    assert len(cache) == private + shared
    for w in range(writers):
        for i in range(0, n, 2):
            hit = cache.get(f"w{w}-{i}")
            assert hit is not None and hit.feedback == f"w{w}"
    cache.close()


def test_engine_serves_repeats_from_cache(tmp_path: Path) -> None:
    path = tmp_path / "engine.sqlite"
    items = [traj("abc"), traj("abc"), traj("boom"), traj("zz", spec={"threshold": 5})]

    async def run() -> list[Result]:
        settings = EngineSettings(cache=path, retries=0, concurrency=1)
        async with Engine(settings, base_dir=tmp_path) as engine:
            return await engine.score(items)

    CountingVerifier.calls = 0
    first = asyncio.run(run())
    assert [r.status for r in first] == ["pass", "pass", "error", "fail"]
    assert first[0].cached is False and first[1].cached is True  # same content, second time
    assert CountingVerifier.calls == 3
    second = asyncio.run(run())
    assert [r.cached for r in second] == [True, True, False, True]  # the error was not stored
    assert CountingVerifier.calls == 4
    assert [r.reward for r in second] == [r.reward for r in first]
    assert all(r.id == "t" for r in second)
