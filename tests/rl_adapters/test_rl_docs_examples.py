"""Every example in docs/adapters.md, run on CPU as written (issue 14 item 3).

Each fenced block of the page is preceded by an ``<!-- example: KIND (...) -->`` comment
that says how it runs and which names are placeholders; a block without one fails
:func:`test_every_example_is_marked`. Placeholders are replaced by exact string substitution
(the test fails if the text it expects is gone), nothing else is edited:

- ``trl``/``trl-continued``: executed; the model name becomes a tiny local Llama and
  ``GRPOConfig`` gets the CPU flags ``use_cpu=True, max_steps=1, max_completion_length=8,
  report_to="none"``: a real ``GRPOTrainer.train()``.
- ``python``: executed with its placeholder names defined (or, for ``reward.py``, written
  to a file and loaded the way OpenRLHF loads ``--reward.remote_url file.py``).
- ``deepspeed``: executed under the DeepSpeed launcher (``deepspeed --num_gpus 2``) with
  ``DS_ACCELERATOR=cpu``, where ``deepspeed.init_distributed()`` picks gloo; each rank defines
  its own ``prompts``/``responses``/``answers`` (the placeholders) before the example's code.
  (An earlier hang here was a stale torch JIT build lock, see .ci/setup.d/60-deepspeed-ops.sh.)
- ``verl-config``: veRL's trainer needs vLLM and a GPU, so the ``reward.*`` overrides are
  applied to a veRL config with OmegaConf's dotlist (as Hydra does) and handed to veRL's
  own loaders (``resolve_reward_manager_cls``, ``get_custom_reward_fn``), then used.
- ``openrlhf-env``: the ``export`` lines are set, the ``$(python -c ...)`` path is resolved
  by running it, and that file is loaded as OpenRLHF loads it and called.
- ``serve``: both shell commands run (``verifiers serve`` on a free port, then ``curl``).
- ``not-run``: installs packages (what CI's setup does).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rl_helpers

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adapters.md"
HERE = Path(__file__).resolve().parent
MARK = re.compile(r"^\s*<!-- example: ([a-z-]+)\b")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def _examples() -> list[tuple[str, str]]:
    """(kind, code) for every fenced block, in page order (kind "" when unmarked)."""
    lines = DOC.read_text(encoding="utf-8").split("\n")
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None or not m.group(2):
            i += 1
            continue
        indent = m.group(1)
        prev = lines[i - 1] if i else ""
        mark = MARK.match(prev)
        body: list[str] = []
        i += 1
        while not lines[i].strip().startswith("```"):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        out.append((mark.group(1) if mark else "", "\n".join(body) + "\n"))
        i += 1
    return out


EXAMPLES = _examples()


def _of(kind: str) -> list[str]:
    return [code for k, code in EXAMPLES if k == kind]


def _sub(code: str, old: str, new: str) -> str:
    assert old in code, f"the example no longer contains {old!r}: update this test's placeholder"
    return code.replace(old, new)


def test_every_example_is_marked() -> None:
    kinds = [k for k, _ in EXAMPLES]
    assert len(kinds) >= 10 and "" not in kinds, kinds
    known = {"trl", "trl-continued", "python", "deepspeed", "verl-config", "openrlhf-env"}
    assert set(kinds) <= known | {"serve", "not-run"}, kinds


@pytest.mark.rl
@pytest.mark.slow
def test_trl_examples_train_on_cpu(tmp_path: Path) -> None:
    import tiny_trl

    tiny_trl.offline()

    [first] = _of("trl")
    code = _sub(
        first,
        'model="Qwen/Qwen2.5-0.5B-Instruct",',
        "model=TINY_MODEL, processing_class=TINY_TOKENIZER,",
    )
    code = _sub(
        code,
        'GRPOConfig(output_dir="out", ',
        "GRPOConfig(output_dir=OUT, use_cpu=True, max_steps=1, max_completion_length=8, "
        'report_to="none", save_strategy="no", ',
    )
    model, tokenizer = tiny_trl.model(), tiny_trl.tokenizer()
    ns: dict[str, Any] = {"TINY_MODEL": model, "TINY_TOKENIZER": tokenizer, "OUT": str(tmp_path)}
    exec(compile(code, "docs/adapters.md#trl", "exec"), ns)
    history = [r for r in ns["trainer"].state.log_history if "rewards/verifiers/mean" in r]
    assert history and all(math.isfinite(r["rewards/verifiers/mean"]) for r in history)
    for block in _of("trl-continued"):
        exec(compile(block, "docs/adapters.md#trl-continued", "exec"), ns)
    assert ns["rewards"].weights == [1.0, 0.0]  # the component function is logged only
    ns["rewards"].close()


@pytest.mark.rl
def test_guard_example() -> None:
    from verifiers.rl_adapters.trl import TRLRewards

    [block] = [c for c in _of("python") if "rewards.guard(" in c]

    def format_reward(completions: list[str], **kwargs: Any) -> list[float]:
        return [0.5 for _ in completions]

    def length_penalty(completions: list[str], **kwargs: Any) -> list[float]:
        return [-0.1 * len(c) for c in completions]

    with TRLRewards(verifier="answer.numeric", asynchronous=False) as rewards:
        ns: dict[str, Any] = {
            "rewards": rewards,
            "format_reward": format_reward,
            "length_penalty": length_penalty,
        }
        exec(compile(block, "docs/adapters.md#guard", "exec"), ns)
        funcs = ns["reward_funcs"]
        task = json.dumps({"verifier": "no.such.verifier"})
        kwargs = {"prompts": ["p", "q"], "completions": ["4", "5"], "reference": ["4", None]}
        kwargs["task"] = [None, task]
        assert [f(**kwargs) for f in funcs] == [[1.0, None], [0.5, None], [-0.1, None]]


def _dotlist(block: str) -> list[str]:
    """The ``key=value`` overrides of a shell block, as Hydra reads them (``+`` = add)."""
    tokens = shlex.split(block.replace("\\\n", " "), comments=True)
    return [t.lstrip("+") for t in tokens if re.match(r"^\+?[a-z_]+(\.\w+)+=", t)]


@pytest.mark.rl
def test_verl_manager_config_builds_the_manager(tmp_path: Path) -> None:
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verifiers.rl_adapters.verl_manager import VerifiersRewardManager
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    [block] = [c for c in _of("verl-config") if "reward_manager.source=importlib" in c]
    from test_rl_verl_trainer import _config

    tok_dir = tmp_path / "tok"
    _tokenizer(tok_dir)
    config = OmegaConf.merge(_config(str(tok_dir), {}), OmegaConf.from_dotlist(_dotlist(block)))
    cls = resolve_reward_manager_cls(config)  # veRL's own importlib hook
    assert cls is VerifiersRewardManager
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)

    async def build() -> Any:  # inside a loop, as veRL's reward worker builds it: outside
        return cls(config, tokenizer, None)  # one, veRL would make a loop nobody closes

    manager = asyncio.run(build())
    assert manager.components == ("tests_passed",) and manager.groups.size == 8


@pytest.mark.rl
def test_verl_compute_score_config_scores_a_sample(tmp_path: Path) -> None:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    [block] = [c for c in _of("verl-config") if "custom_reward_function.path" in c]
    from test_rl_verl_trainer import _config

    config = OmegaConf.merge(_config(str(tmp_path), {}), OmegaConf.from_dotlist(_dotlist(block)))
    fn = get_custom_reward_fn(config)  # veRL's own loader, with its reward_kwargs partial
    assert fn is not None
    out = asyncio.run(fn(data_source="x", solution_str="so 42", ground_truth="42", extra_info={}))
    assert out["score"] == 1.0 and out["tests_passed"] == 0.0  # the fixed key set


@pytest.mark.rl
def test_openrlhf_env_example_loads_the_file_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    [block] = _of("openrlhf-env")
    for key, value in re.findall(r"^export (\w+)=(\S+)", block, flags=re.M):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("VERIFIERS_SANDBOX", "none")
    [cmd] = re.findall(r"\"\$\((python -c '[^']*')\)\"", block)
    argv = shlex.split(cmd)
    path = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, check=True
    ).stdout.strip()
    spec = importlib.util.spec_from_file_location("reward_func", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.reward_func(["Q: 2+2? A: 4"], ["Q: 2+2? A:"], ["4"])
    assert out["rewards"].tolist() == [1.0]
    assert "tests_passed" in out["extra_logs"]
    module._env_func.scorer.close()


@pytest.mark.rl
def test_openrlhf_reward_py_example(tmp_path: Path) -> None:
    [block] = [c for c in _of("python") if "make_reward_func" in c]
    path = tmp_path / "reward.py"
    path.write_text(block, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("reward_func", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = json.dumps({"verifier": "rltest.contains", "reference": "9"})
    out = module.reward_func(["P x9"], ["P"], [task])
    assert out["rewards"].tolist() == [1.0]
    module.reward_func.scorer.close()


def _tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    ).save_pretrained(path)


@pytest.mark.slow
def test_serve_example_runs_as_written() -> None:
    [block] = _of("serve")
    serve_line, curl = block.split("\n", 1)
    port = rl_helpers.free_port()
    argv = shlex.split(_sub(serve_line, "--port 8000", f"--port {port}"))
    assert argv[:2] == ["verifiers", "serve"]
    server = subprocess.Popen(
        [sys.executable, "-m", "verifiers.cli", *argv[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        rl_helpers.wait_until_healthy(f"http://127.0.0.1:{port}", server)
        done = subprocess.run(
            ["bash", "-c", _sub(curl, "localhost:8000", f"localhost:{port}")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        [result] = json.loads(done.stdout)["results"]
        assert result["id"] == "a" and result["reward"] == 1.0
    finally:
        with server:  # closes its stderr pipe
            server.terminate()
            server.wait(timeout=60)


DEEPSPEED_RANK_DATA = """
import os
_rank = int(os.environ["RANK"])
prompts = ["p", "p"] if _rank == 0 else ["p"]
responses = ["The answer is 2", "no idea"] if _rank == 0 else ["It is 3"]
answers = ["2", "2"] if _rank == 0 else ["4"]
"""


@pytest.mark.rl
@pytest.mark.slow
def test_deepspeed_example_runs_under_the_launcher(tmp_path: Path) -> None:
    """The page's DeepSpeed block, run by the real launcher on 2 CPU ranks: every rank gets
    its own samples' rewards, position for position (never rank 0's)."""
    (code,) = _of("deepspeed")
    script = DEEPSPEED_RANK_DATA + code
    # Each rank writes its own file: two ranks printing to the launcher's one stdout can
    # interleave mid-line (ci on 1ad3107 read "RESULTRESULT 0 {...}" / " 1 {...}").
    script += (
        "\nimport json, pathlib\n"
        'pathlib.Path(f"result-{_rank}.json").write_text(json.dumps({"rewards": '
        'rewards.tolist(), "valid": valid.tolist()}))\n'
    )
    train = tmp_path / "train.py"
    train.write_text(script, encoding="utf-8")
    port = rl_helpers.free_port()
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "VERIFIERS_LOCK_DIR": str(tmp_path)}
    launcher = "from deepspeed.launcher.runner import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", launcher, "--num_gpus", "2", "--master_port", str(port), str(train)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    got: dict[int, Any] = {
        int(f.stem.removeprefix("result-")): json.loads(f.read_text(encoding="utf-8"))
        for f in tmp_path.glob("result-*.json")
    }
    assert got == {
        0: {"rewards": [1.0, 0.0], "valid": [True, True]},
        1: {"rewards": [0.0], "valid": [True]},
    }, done.stdout[-3000:]
