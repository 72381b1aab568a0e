"""Module-level regexes are compiled on first use (triage.lazy_regex), and behave as compiled ones."""

from __future__ import annotations

import re
import subprocess
import sys

import regex

from triage.lazy_regex import lazy_compile, lazy_re


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
