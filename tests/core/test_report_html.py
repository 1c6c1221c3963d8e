"""``verifiers report``: the page a user opens to see which items failed and why.

The structure is checked on the HTML; what a person sees is checked in a real browser
(headless Chromium, ``browser`` marker): the page renders (a screenshot that is not blank),
the table's rows exist in the DOM, the URL-hash filter selects the right rows, and hostile
text from the scored file (feedback is model output) stays text, never markup or script.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_process import run_cli

from verifiers import Result
from verifiers.io import ResultWriter
from verifiers.report import ROWS_PER_STATUS, build_report, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"

REPO = Path(__file__).resolve().parents[2]
CORPUS = [
    json.loads(line)
    for line in (REPO / "datasets/report/hostile_text.jsonl").read_text().splitlines()
]
XSS = [entry["text"] for entry in CORPUS]
"""Hostile text by family (tags, breaking out of the table or the data block, attributes,
URLs, CSS, script contexts, pre-escaped entities, control characters): model feedback and
anything else a scored file carries."""


def _write(path: Path, results: list[Result]) -> Path:
    with ResultWriter(path) as writer:
        for result in results:
            writer.write(result)
    return path


def _stamped(result: Result, **update: object) -> Result:
    return result.model_copy(update=update)


def sample_results() -> list[Result]:
    results: list[Result] = []
    for i in range(120):
        results.append(
            _stamped(Result.scored(1.0), id=f"p{i}", verifier="answer.exact@1", duration_s=0.0001)
        )
    for i in range(130):  # more than one page of failures
        results.append(
            _stamped(
                Result.scored(
                    0.25,
                    feedback=f"test_{i} failed: expected 4, got 5",
                    components={"tests_passed": 0.25},
                ),
                id=f"f{i}",
                verifier="code.tests@1",
                duration_s=0.5,
            )
        )
    for i in range(7):
        errored = Result.errored("infra", f"Docker engine not reachable (item {i})", line=300 + i)
        results.append(_stamped(errored, id=f"e{i}", verifier="code.tests@1", duration_s=0.01))
    bad = Result.errored("bad_input", "line is not valid JSON", line=400)
    results.append(_stamped(bad, id=None, verifier=""))
    for i, attack in enumerate(XSS):
        hostile = Result.scored(0.0, feedback=attack)
        results.append(
            _stamped(
                hostile, id=f"x{i}{attack[:12]}", verifier=f"evil{attack[:20]}", duration_s=2.0
            )
        )
    cached = Result.scored(1.0, feedback="from the cache")
    results.append(
        _stamped(cached, id="c0", verifier="render.blender@1", cached=True, duration_s=8.0)
    )
    return results


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(text)
    return parser.tags


def injected(found: list[tuple[str, dict[str, str | None]]]) -> list[str]:
    """What in a page could only have come from hostile text."""
    bad = [t for t, _ in found if t in ("img", "iframe", "details", "a", "b")]
    if sum(t == "style" for t, _ in found) != 1 or sum(t == "h1" for t, _ in found) != 1:
        bad.append("style or h1")  # the page has one of each of its own
    bad += [f"{t} {k}" for t, a in found for k in a if k.startswith("on")]
    bad += [t for t, a in found if a.get("id") == "injected" or a.get("http-equiv") == "refresh"]
    scripts = [a for t, a in found if t == "script"]
    if len(scripts) != 2:  # the data block and the page's own script, nothing else
        bad.append(f"{len(scripts)} scripts")
    return bad


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{e['family']}-{e['name']}" for e in CORPUS])
def test_hostile_text_never_becomes_markup(tmp_path: Path, entry: dict[str, str]) -> None:
    text = entry["text"]
    results = [
        _stamped(Result.scored(0.0, feedback=text), id=text, verifier=text),
        _stamped(Result.errored("verifier", text, line=3), id=f"e-{text}", verifier=f"v@{text}"),
        _stamped(Result.scored(1.0), id="ok", verifier="answer.exact@1"),
    ]
    page = build_report(_write(tmp_path / "s.jsonl", results))
    assert injected(tags(page)) == []
    block = page.split('<script type="application/json" id="rows">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and ">" not in block and "\u2028" not in block
    rows = json.loads(block)
    assert {r["status"] for r in rows} == {"fail", "error"}
    expected = " ".join(text.split())[:399]
    assert all(r["text"].startswith(expected[:50]) for r in rows)  # kept as data, as written


def test_page_has_every_section_and_escapes_everything(tmp_path: Path) -> None:
    scored = _write(tmp_path / "s.jsonl", sample_results())
    text = build_report(scored)
    for section in ("Run", "Per verifier", "Components", "Errors by kind", "Failures and errors"):
        assert f"<h2>{section}" in text
    found = tags(text)
    # hostile strings never become elements or attributes
    assert not any(t == "img" for t, _ in found)
    assert not any("onerror" in a or "onload" in a for _, a in found)
    assert not any(a.get("id") == "injected" for _, a in found)
    assert sum(1 for t, _ in found if t == "script") == 2  # the data block and the page's own
    # the data block cannot be closed by the text inside it
    block = text.split('<script type="application/json" id="rows">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and ">" not in block and "\u2028" not in block
    rows = json.loads(block)
    assert {r["text"] for r in rows} >= set(XSS[:4])  # kept as data, exactly
    assert len(rows) == 130 + len(XSS) + 7 + 1  # every fail and error, no pass
    # per-verifier statistics, readable errors by kind, components, metadata
    assert "code.tests@1" in text and "render.blender@1" in text
    assert re.search(r"<th>bad_input</th>.*<th>infra</th>", text)
    assert "tests_passed" in text and "0.250" in text
    assert "(cached)" in text  # latency of cache hits is labelled, not missing
    assert "from cache</th><td>1<" in text


def test_page_stays_bounded_for_huge_files(tmp_path: Path) -> None:
    n = 12_000
    results = [
        _stamped(Result.scored(0.0, feedback="x" * 2000), id=f"f{i}", verifier=f"v{i % 50}@1")
        for i in range(n)
    ]
    results += [
        _stamped(Result.errored("timeout", "slow"), id=f"t{i}", verifier="v0@1") for i in range(20)
    ]
    scored = _write(tmp_path / "big.jsonl", results)
    text = build_report(scored)
    block = text.split('id="rows">', 1)[1].split("</script>", 1)[0]
    rows = json.loads(block)
    assert sum(r["status"] == "fail" for r in rows) == ROWS_PER_STATUS
    assert sum(r["status"] == "error" for r in rows) == 20  # errors are not crowded out
    assert f"first {ROWS_PER_STATUS:,} of {n:,} fail results" in text
    assert len(text.encode()) < 1_200_000  # 24 MB of input, one small page
    assert text.count("<tr><th scope=row>v") >= 50  # fifty verifiers: fifty rows of charts


def test_cli_report_from_a_real_run(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    rows = [
        {"id": "a", "completion": "4", "task": {"verifier": "answer.exact", "reference": "4"}},
        {"id": "b", "completion": "5", "task": {"verifier": "answer.exact", "reference": "4"}},
        {"id": "c", "completion": "x", "task": {"verifier": "answer.exakt"}},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    out = tmp_path / "s.jsonl"
    run = run_cli("score", src, "-o", out, "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    html = tmp_path / "r.html"
    proc = run_cli("report", out, "--html", html, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = html.read_text()
    assert "did you mean" in text and "not valid JSON" in text
    assert "answer.exact@1" in text
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = run_cli("report", empty, "--html", html, cwd=tmp_path)
    assert proc.returncode == 1 and "holds no results" in proc.stderr


# -- in a real browser -----------------------------------------------------------------------


def chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def dom_rows(dom: str) -> list[dict[str, str | None]]:
    return [a for t, a in tags(dom) if t == "tr" and "data-n" in a]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    scored = _write(root / "s.jsonl", sample_results())
    page = root / "report.html"
    write_report(scored, page)
    return page


@pytest.mark.browser
def test_browser_renders_the_table_and_a_screenshot(report_page: Path, tmp_path: Path) -> None:
    from PIL import Image

    dom = chromium(tmp_path, "--dump-dom", report_page.as_uri())
    assert 'data-ready="1"' in dom  # the page's script ran to the end
    rows = dom_rows(dom)
    assert len(rows) == 50  # the first page
    assert re.search(r'id="shown">158 of 158 rows; page 1 of 4<', dom)
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,2000", report_page.as_uri())
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, bars and histograms, not a blank page
    assert any(c[:3] == (46, 125, 50) for _, c in colours)  # the pass colour of the status bars


@pytest.mark.browser
def test_browser_filters_from_the_url_hash(report_page: Path, tmp_path: Path) -> None:
    errors = dom_rows(chromium(tmp_path, "--dump-dom", report_page.as_uri() + "#status=error"))
    assert len(errors) == 8 and {r["data-status"] for r in errors} == {"error"}
    found = chromium(tmp_path, "--dump-dom", report_page.as_uri() + "#q=test_12%20failed")
    assert [r["data-n"] for r in dom_rows(found)] == ["133"]  # f12 is the 133rd result
    assert "test_12 failed" in found
    last = dom_rows(chromium(tmp_path, "--dump-dom", report_page.as_uri() + "#page=4"))
    assert len(last) == 158 - 150
    both = chromium(
        tmp_path, "--dump-dom", report_page.as_uri() + "#status=fail&verifier=code.tests%401&page=2"
    )
    second = dom_rows(both)
    assert len(second) == 50 and second[0]["data-n"] == "171"  # the 51st code.tests failure
    assert "130 of 158 rows; page 2 of 3" in both


@pytest.mark.browser
def test_browser_runs_no_hostile_text(report_page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", report_page.as_uri() + "#q=x")
    found = tags(dom)
    assert "<title>verifiers report: s.jsonl</title>" in dom  # onerror never set the title
    assert not any("data-pwned" in a for _, a in found)
    assert not any(t in ("img", "svg") and ("onerror" in a or "onload" in a) for t, a in found)
    assert not any(a.get("id") == "injected" for _, a in found)
    assert injected(found) == []
    assert "&lt;img src=x onerror=" in dom  # shown as text in its cell
