"""Module-level regexes are compiled on first use (triage.lazy_regex), and behave as compiled ones;
`regex` patterns are made from what an earlier run kept, and are the patterns regex compiles."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import regex

from triage.lazy_regex import lazy_compile, lazy_re

HANG = Path(__file__).resolve().parent / "fixtures" / "real-gloo-hang-rank2" / "logs"


def test_compiled_on_first_use_and_the_same_as_compiled() -> None:
    source, flags = r"(?P<rank>\d+) of (?P<world>\d+)", regex.IGNORECASE
    lazy = lazy_compile(source, flags)
    assert lazy._compiled is None  # nothing compiled at definition
    eager = regex.compile(source, flags)
    text = "rank 3 OF 8, then 5 of 16"
    assert lazy.search(text).groupdict() == eager.search(text).groupdict()
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert lazy.sub("<n>", text) == eager.sub("<n>", text)
    assert (lazy.pattern, lazy.flags, lazy.groupindex) == (eager.pattern, eager.flags, eager.groupindex)
    assert lazy.match("x") is None and lazy.fullmatch("1 of 2") is not None


def test_re_patterns_too_of_text_and_of_bytes() -> None:
    text = lazy_re(r"rank[_.-]?0*(\d{1,9})$", re.I)
    assert text._compiled is None
    assert text.search("dump_RANK_007").group(1) == "7"
    data = lazy_re(rb'"(entries|pg_config)"')
    assert data.findall(b'{"entries": [], "pg_config": {}}') == [b"entries", b"pg_config"]
    assert isinstance(data._compiled, re.Pattern)


def test_an_invalid_pattern_fails_when_used() -> None:
    lazy = lazy_compile(r"(unclosed")
    try:
        lazy.search("x")
    except regex.error:
        pass
    else:
        raise AssertionError("an invalid pattern compiled")


def test_importing_the_analysis_compiles_few_patterns() -> None:
    # The analysis imports every reader; a log shows only some formats, and the patterns of the
    # others are never compiled. (Counts, not time: the rules and a few shared patterns compile later.)
    code = ("import regex; n = [0]; c = regex.compile\n"
            "def counted(*a, **k):\n n[0] += 1; return c(*a, **k)\n"
            "regex.compile = counted\nimport triage.api\nprint(n[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) < 10, out.stdout


def _module_patterns() -> list[tuple[str, int]]:
    """The `regex` patterns triage's modules compile lazily (source, flags), found by importing
    every module that defines one."""
    import importlib
    import pkgutil

    import triage
    from triage.lazy_regex import _Lazy, _regex_compile

    found = []
    for info in pkgutil.walk_packages(triage.__path__, "triage."):
        if info.name.startswith(("triage.health", "triage.repro.rank", "triage.__main__")):
            continue  # torch-side modules
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for value in vars(module).values():
            if isinstance(value, _Lazy) and value._compile is _regex_compile and not value._kwargs:
                source, *rest = value._args
                if isinstance(source, str):
                    found.append((source, int(rest[0]) if rest else 0))
    return found


def test_a_kept_pattern_is_the_pattern_regex_compiles() -> None:
    # What compile_regex keeps of a pattern, through JSON as the file holds it, makes the pattern
    # regex.compile makes: every built-in rule's regexes and every module pattern, compared by
    # their compiled form and on each rule's own examples (whole and partial searches).

    from triage.lazy_regex import _from_kept, _kept_data
    from triage.rule_examples import example_lines
    from triage.rules import load_rules

    rules = load_rules()
    sources = [(r.regex_source, 0) for r in rules]
    sources += [(s, 0) for r in rules if r.block for s in r.block.field_sources]
    module = _module_patterns()
    assert len(module) > 50 and len(rules) > 200
    for source, flags in sources + module:
        fresh = regex.compile(source, flags)
        data = json.loads(json.dumps(_kept_data(fresh)))
        made = _from_kept(source, data)
        assert made is not None, source
        assert (made.pattern, made.flags, made.groupindex, made.groups) == \
            (fresh.pattern, fresh.flags, fresh.groupindex, fresh.groups), source
        assert made._pickled_data == fresh._pickled_data, source
    for rule in rules:
        made = _from_kept(rule.regex_source, json.loads(json.dumps(_kept_data(regex.compile(rule.regex_source)))))
        for example in (rule.examples.get("match") or []) + (rule.examples.get("nomatch") or []):
            for line in example_lines(example):
                for partial in (False, True):
                    got, want = made.search(line, partial=partial), rule.pattern.search(line, partial=partial)
                    assert (got and (got.span(), got.groupdict())) == (want and (want.span(), want.groupdict()))


def test_an_entry_not_written_by_this_module_is_not_used() -> None:
    from triage.lazy_regex import _from_kept, _kept_data

    good = _kept_data(regex.compile(r"(?P<rank>\d+) of (?P<world>\d+)"))
    assert good is not None and _from_kept(r"(?P<rank>\d+) of (?P<world>\d+)", good) is not None
    for bad in (None, [], good[:7], [*good[:1], [1, 2], *good[2:]], [*good[:2], {"rank": "1"}, *good[3:]],
                [*good[:3], [[1, 2]], *good[4:]], [*good[:5], ["x"], *good[6:]], [*good[:1], "zz", *good[2:]]):
        assert _from_kept(r"(?P<rank>\d+) of (?P<world>\d+)", bad) is None, bad
    # Named lists and locale-dependent patterns are not kept at all.
    assert _kept_data(regex.compile(r"\L<words>", words=["a", "b"])) is None
    assert _kept_data(regex.compile(rb"\w+", regex.LOCALE)) is None


def _compiles_and_report(tmp_path: Path, cache: Path) -> tuple[int, str]:
    """One analysis in its own process: how many patterns regex's parser compiled, and the report."""
    out = tmp_path / "report.json"
    code = ("import sys, regex\nn = [0]; c = regex.compile\n"
            "def counted(*a, **k):\n    n[0] += 1\n    return c(*a, **k)\n"
            "regex.compile = counted\nfrom triage.cli import main\n"
            f"sys.argv = ['triage', 'analyze', '--quiet', '-j', '1', '-o', 'json={out}', {str(HANG)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(n[0])\n")
    env = {**os.environ, "TRIAGE_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "Traceback" not in done.stderr, done.stderr
    return int(done.stdout), out.read_text()


def test_the_next_run_makes_its_patterns_from_what_this_one_kept(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, report = _compiles_and_report(tmp_path, cache)
    kept = list(cache.glob("regex-*.json"))
    assert len(kept) == 1
    # Every pattern the first run's parser compiled (the rules and formats this job's logs show) is kept.
    entries = json.loads(kept[0].read_bytes().partition(b"\n")[2])
    assert first > 0 and len(entries) == first
    again, same = _compiles_and_report(tmp_path, cache)
    assert again == 0 and same == report
    # A damaged file (one byte changed) fails its digest: every pattern is compiled again, alike.
    data = bytearray(kept[0].read_bytes())
    data[-10] ^= 0x01
    kept[0].write_bytes(bytes(data))
    damaged, same = _compiles_and_report(tmp_path, cache)
    assert damaged == first and same == report
