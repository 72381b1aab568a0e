"""The html format: self-contained and offline, log text inert, and drawn by a real headless browser.

The browser part runs Debian's `chromium` (`.ci/run` installs it) with `--dump-dom` and
`--screenshot` on the reports of examples/job-2x8-hang and of the 1,024-rank fixture; it is skipped,
saying why, only where no chromium binary exists.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from triage.api import analyze
from triage.model import Evidence, Report
from triage.report import REGISTRY, render
from triage.report.views import build

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "examples/job-2x8-hang/logs"
BIG = "tests/fixtures/big-1024-silent-rank777/logs"
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
_NETWORK = re.compile(r"""(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I)
_CSS_URL = re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//|@import", re.I)


def _analyze(path: str) -> Report:
    cwd = Path.cwd()
    os.chdir(ROOT)  # sources named relative to the repository
    try:
        return analyze([path])
    finally:
        os.chdir(cwd)


def _html(report: Report) -> str:
    out = io.StringIO()
    render(report, "html", out)
    return out.getvalue()


@pytest.fixture(scope="module")
def example() -> Report:
    return _analyze(EXAMPLE)


@pytest.fixture(scope="module")
def big() -> Report:
    assert (ROOT / BIG).exists(), "the 1,024-rank fixture is missing"
    return _analyze(BIG)


# --- offline and inert -------------------------------------------------------------------------------

def _assert_offline(text: str) -> None:
    assert not _NETWORK.search(text), _NETWORK.search(text)
    assert not _CSS_URL.search(text)
    assert "<link rel=\"stylesheet\"" not in text and "<iframe" not in text
    assert "default-src 'none'" in text  # the CSP forbids loading anything, even if a link slipped in
    assert text.count("<script") == 1  # the one inline script, allowed by its hash


def test_example_page_is_self_contained(example: Report) -> None:
    text = _html(example)
    _assert_offline(text)
    assert text.startswith("<!DOCTYPE html>")
    assert "rank 11 (gpu-node-02)" in text
    for section in ('id="verdict"', 'id="ranks"', 'id="timeline"', 'id="evidence"', 'id="sources"'):
        assert section in text
    assert text.count('data-rank="') == 16
    assert 'id="ev-0"' in text and 'data-rank="11" href="#ev-0"' in text  # the culprit's cell links
    assert "rule <code>pytorch-watchdog-timeout</code>" in text


def test_log_text_cannot_inject_markup(example: Report) -> None:
    evil = '<script>alert(1)</script><img src="http://evil.example/x" onerror="alert(2)">&amp;'
    v = example.verdict
    culprit = dataclasses.replace(v.culprits[0], evidence=[Evidence("logs/<b>.log", 7, evil)],
                                  reason=evil)
    bad = dataclasses.replace(example, verdict=dataclasses.replace(v, culprits=[culprit], reasoning=evil,
                                                                    advice=[evil], missing=[evil]))
    text = _html(bad)
    assert "<script>alert" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&amp;amp;" in text  # escaped once more, never decoded
    assert text.count("<script") == 1
    assert "http://evil" in text and not _NETWORK.search(text)  # only as text, never as a resource


def test_error_page_escapes_the_message() -> None:
    out = io.StringIO()
    REGISTRY["html"].write_error("no readable log among the inputs (<x> & y)", "1.0", out)
    text = out.getvalue()
    assert "no readable log among the inputs (&lt;x&gt; &amp; y)" in text
    _assert_offline(text)


def test_big_grid_has_a_cell_per_rank_and_folds(big: Report) -> None:
    text = _html(big)
    _assert_offline(text)
    assert len(set(re.findall(r'data-rank="(\d+)"', text))) == 1024
    assert text.count('data-rank="') == 1024
    assert text.count('<details class="fold">') == 2  # hosts 1-97 and 99-128, 98 on its own
    assert "97 hosts, ranks 0-775" in text
    assert 'data-rank="777" href="#ev-' in text
    assert len(text) < 400_000
    view = build(big)
    assert view.ranks[777].role == "culprit"


# --- a real browser ---------------------------------------------------------------------------------

def _chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update", "--disable-extensions",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1280,1400", *args, page.as_uri()],
        capture_output=True, text=True, timeout=90, check=False)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line
            or "Content Security Policy" in line]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (.ci/run installs Debian's chromium)")
@pytest.mark.parametrize(("name", "culprit", "ranks"), [
    ("example", "rank 11 (gpu-node-02)", 16), ("big", "rank 777 (gpu-node-098)", 1024)])
def test_browser_renders_report(name: str, culprit: str, ranks: int, tmp_path: Path,
                                request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(name)
    page = tmp_path / "report.html"
    page.write_text(_html(report), encoding="utf-8")
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-rendered="yes"' in html, "the inline script did not run (CSP hash?)"
    assert 'data-js-errors="0"' in html
    assert not _console_errors(dom.stderr), _console_errors(dom.stderr)
    assert culprit in html
    assert len(set(re.findall(r'data-rank="(\d+)"', html))) == ranks
    assert 'class="cell r-culprit"' in html
    shot = tmp_path / "shot.png"
    run = _chromium(page, tmp_path, f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert not _console_errors(run.stderr), _console_errors(run.stderr)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
