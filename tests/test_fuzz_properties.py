"""Property tests (hypothesis): the scanner, path identity, the rule loader and every formatter
take arbitrary input without raising anything but their documented errors.

Short on purpose (30 examples each); tools/fuzz/ (`python -m tools.fuzz`) is the long driver over whole CLI runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.api import NoInput, analyze
from triage.ingest.identity import identity_from_path
from triage.model import Identity
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.report import REGISTRY, render
from triage.rules import RuleError, load_rule, load_rules

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Fragments of real log lines, so that generated lines reach the rules and not just the prefilter.
FRAGMENTS = [
    "NCCL WARN", "NCCL INFO", "[rank3]:", "[Rank 3]", "Watchdog caught collective operation timeout",
    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600011 milliseconds",
    "torch.OutOfMemoryError: CUDA out of memory.", "Traceback (most recent call last):",
    "RuntimeError:", "srun: error: node12: task 5: Exited with exit code 1", "nranks 100000000",
    "rank 99999999", "EI0002", "EJ0001", "[ERROR] HCCL", "ProcessGroupNCCL.cpp:616", "{rank}", "{}",
    "{0:>99999}", "%s", "\x00", "\r", "\x1b[31m", "\ufffd", "[", "]", "(", ")", "|", "\\",
]

line_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
lines = st.lists(st.one_of(line_text, st.sampled_from(FRAGMENTS),
                           st.lists(st.one_of(line_text, st.sampled_from(FRAGMENTS)), max_size=4)
                           .map("".join)),
                 max_size=40)


@cache
def _matcher() -> Matcher:
    return Matcher(load_rules(()))


@SETTINGS
@given(lines=lines, cuts=st.lists(st.integers(0, 4000), max_size=5),
       ending=st.sampled_from(["\n", "\r\n", "\r", ""]))
def test_scan_text_never_raises_and_cites_lines_in_range(lines: list[str], cuts: list[int],
                                                          ending: str) -> None:
    text = "\n".join(lines) + ending
    # split the text into pieces anywhere: lines straddle pieces in real reads
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    stats = ScanStats()
    events = list(scan_text(_matcher(), "rank-3.log", Identity(), pieces, stats))
    total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    assert stats.lines <= max(total, 1)
    for event in events:
        assert 1 <= event.evidence.line <= max(total, 1), (event.rule_id, event.evidence, total)
        assert event.evidence.source == "rank-3.log"


path_part = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.sampled_from(["rank-3.log", "rank99999999999999999999", "worker_7.log", "node01", "!", "..",
                     "device-3", "local_rank_2", "attempt_0", "3", "-1", "rank-1", "plog", "\\",
                     "torchelastic_x", "default_1", "stdout.log", "slurm-12_3.out", "٣"]),
)


@SETTINGS
@given(parts=st.lists(path_part, max_size=8), sep=st.sampled_from(["/", "\\", "!"]))
def test_identity_from_path_never_raises_nor_gives_negative_ranks(parts: list[str], sep: str) -> None:
    identity = identity_from_path(sep.join(parts))
    for value in (identity.rank, identity.local_rank, identity.device):
        assert value is None or value >= 0


def _base_rule() -> dict[str, object]:
    path = Path(__file__).resolve().parents[1] / "rules" / "slurm" / "slurm-first-task-exited.yaml"
    data: dict[str, object] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


yaml_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                        st.floats(allow_nan=True), st.text(max_size=30),
                        st.sampled_from(["(a+)+$", "(?P<rank>\\d+)", "[", "{rank:>99999}", "{nope}",
                                         "{", "last-line", "failure", "execution", "error"]))
yaml_value = st.recursive(yaml_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=10)
RULE_KEYS = sorted(_base_rule())


@SETTINGS
@given(changes=st.dictionaries(st.sampled_from([*RULE_KEYS, "scan", "block", "zzz"]), yaml_value,
                               max_size=4),
       drop=st.lists(st.sampled_from(RULE_KEYS), max_size=3),
       whole=st.one_of(st.none(), yaml_value))
def test_load_rule_raises_only_rule_error(changes: dict[str, object], drop: list[str],
                                          whole: object) -> None:
    data: object
    if whole is not None and not isinstance(whole, dict):
        data = whole  # a document that is no mapping at all
    else:
        rule = _base_rule()
        rule.update(changes)
        for key in drop:
            rule.pop(key, None)
        data = rule
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rule.yaml"
        path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        for builtin in (False, True):
            with contextlib.suppress(RuleError):  # anything else fails the test
                load_rule(path, builtin=builtin)


@SETTINGS
@given(lines=lines.filter(lambda ls: any(line.strip() for line in ls)),
       name=st.sampled_from(["rank-3.log", "node01-rank-0.log", "worker_2.log", "job.out"]))
def test_every_formatter_renders_analyze_reports(lines: list[str], name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        try:
            report = analyze([path])
        except NoInput:
            return  # nothing readable (a binary-looking file): the CLI's exit 2
    for fmt in REGISTRY:
        out = io.StringIO()
        render(report, fmt, out, color=False)
        # The scheduler's data outputs (an --exclude= line, ranks) are empty when nothing is excluded.
        assert out.getvalue().strip() or fmt in ("slurm-exclude", "ranks"), f"{fmt} rendered nothing"
        if fmt == "json":
            assert json.loads(out.getvalue())["verdict"]["status"] == report.verdict.status.value


# Failures the fuzzers found, one fixture each (tests/fixtures/fuzz-*/README.md says what and why).
FUZZ_FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("name", ["fuzz-int-digits-line", "fuzz-int-digits-member", "fuzz-huge-fingerprint-rank"])
def test_fuzz_regression_fixtures(name: str) -> None:
    report = analyze([FUZZ_FIXTURES / name / "input"])
    assert all(s.skipped is None for s in report.sources), report.sources


def test_fuzz_dump_without_entries_report_fits_the_schema() -> None:
    import jsonschema

    from triage.report.json_format import to_dict

    schema_path = Path(__file__).resolve().parents[1] / "src" / "triage" / "schemas" / "report-v1.schema.json"
    report = analyze([FUZZ_FIXTURES / "fuzz-dump-no-entries-culprit" / "input"])
    assert any(c.rank == 2 for c in report.verdict.culprits), report.verdict.reasoning  # the stalled rank
    jsonschema.validate(to_dict(report), json.loads(schema_path.read_text(encoding="utf-8")))


def test_fuzz_world_size_zero_report_fits_the_schema() -> None:
    import jsonschema

    from triage.report.json_format import to_dict

    schema_path = Path(__file__).resolve().parents[1] / "src" / "triage" / "schemas" / "report-v1.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    report = analyze([FUZZ_FIXTURES / "fuzz-world-size-zero" / "input"])
    assert report.world_size != 0  # `nranks 0` states no world
    jsonschema.validate(to_dict(report), schema)
