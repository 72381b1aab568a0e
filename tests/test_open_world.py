"""The open world: a line that its own format marks as an error is evidence even when no rule knows it.

Jobs are real files in tmp_path, read by the real command line (typer's CliRunner); the scanner is
also driven directly where a line's marker, a chunk boundary or a near miss is the point.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from triage.cli import app
from triage.model import Event, Identity, Kind
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text())
MATCHER = Matcher(load_rules())
RUNNER = CliRunner()
NOT_HEALTHY = ("the diagnosis still reports no_failure for a job whose only error is unexplained: "
               "that is the diagnosis (diagnose/) not counting UNEXPLAINED events yet, not the scanner")

UNKNOWN_NCCL_WARN = ("{host}:{pid}:{tid} [{dev}] transport/net_foo.cc:41{dev} NCCL WARN NET/Foo : "
                     "frobnicator lost sync with peer 10.42.0.{peer}<{port}> after {n} retries")
UNKNOWN_HCCL = ("[ERROR] HCCL({pid},python):2025-03-04-10:11:{sec:02d}.123.456 [frob_manager.cc:42][{pid}]"
                "[ExecStage][Frob]Frobnication of the notify table failed, errNo[0x0000000005000099], "
                "code EI0099, deviceId[{dev}]")
UNKNOWN_EXCEPTION = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
                     "{req}, Hardware limit: 232448. Reducing block sizes or `num_stages` may help.")


def healthy_lines(rank: int, host: str, pid: int) -> list[str]:
    """What a healthy rank prints: NCCL INFO chatter (with "error" words), warnings, progress."""
    return [
        f"{host}:{pid}:{pid} [{rank % 4}] NCCL INFO Bootstrap : Using eth0:10.42.0.{rank}<0>",
        f"{host}:{pid}:{pid} [{rank % 4}] NCCL INFO NET/IB : No device found, error count 0, fallback",
        f"{host}:{pid}:{pid} [{rank % 4}] NCCL INFO comm 0x55df01b24dd{rank} rank {rank} nranks 4 "
        f"cudaDev {rank % 4} nvmlDev {rank % 4} busId 4f000 commId 0x2114bc51af4fb978 - Init COMPLETE",
        f"[rank{rank}]:[W1121 10:00:00.000000000 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank {rank}]  "
        "using GPU to perform barrier; errors may follow if the mapping is wrong",
        "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning: worker "
        "exited with exit code 1 once; retrying",
        "  warnings.warn(",
        f"2026-11-21 10:00:0{rank},123 WARNING train: checkpoint save failed with exit code 1, will retry",
        f"2026-11-21 10:00:0{rank},456 INFO train: rank {rank}/4 step 10 loss 2.31 (0 errors)",
    ]


def write_job(folder: Path, extra: dict[int, list[str]], ranks: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        host = f"gpu-node-0{rank // 2}"
        lines = healthy_lines(rank, host, 4400 + rank) + extra.get(rank, [])
        (folder / f"rank{rank}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def analyze_json(*paths: Path, rules: Path | None = None) -> tuple[int, dict[str, Any]]:
    args = ["analyze", "--format", "json", *map(str, paths)]
    if rules is not None:
        args += ["--rules", str(rules)]
    result = RUNNER.invoke(app, args)
    assert result.exception is None or result.exit_code in (0, 1, 3), result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, SCHEMA)
    return result.exit_code, report


def events_of(text: str, pieces: int | None = None) -> list[Event]:
    chunks = [text] if pieces is None else [text[i:i + pieces] for i in range(0, len(text), pieces)]
    return list(scan_text(MATCHER, "t.log", Identity(), chunks, ScanStats()))


def unexplained(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind is Kind.UNEXPLAINED]


# --- a job whose only error no rule knows is not healthy -------------------------------------------

def test_an_unknown_nccl_warn_is_reported_and_the_job_is_not_healthy(tmp_path: Path) -> None:
    line = UNKNOWN_NCCL_WARN.format(host="gpu-node-01", pid=4402, tid=4590, dev=2, peer=3, port=55552, n=7)
    job = write_job(tmp_path / "job", {2: ["", line]})
    code, report = analyze_json(job)
    [entry] = report["unexplained"]
    assert entry["marker"] == "nccl-warn"
    assert entry["family"] == "nccl"
    assert entry["signature"] == "NET/Foo : frobnicator lost sync with peer <ip> after <n> retries"
    assert entry["ranks"] == [2] and entry["hosts"] == ["gpu-node-01"]
    assert entry["first"]["text"] == line and entry["first"]["line"] == 10
    assert entry["first"]["source"].endswith("rank2.log")
    assert entry["new_rule"].startswith("triage rules new --from-line ")
    assert report["verdict"]["status"] != "no_failure", NOT_HEALTHY
    assert code != 0, NOT_HEALTHY


def test_an_unknown_hccl_error_record_with_an_unfamiliar_code(tmp_path: Path) -> None:
    line = UNKNOWN_HCCL.format(pid=31337, sec=5, dev=1)
    job = write_job(tmp_path / "job", {1: [line]})
    code, report = analyze_json(job)
    [entry] = report["unexplained"]
    assert entry["marker"] == "cann-error"
    assert entry["family"] == "hccl"
    assert "EI0099" in entry["signature"]  # an error code is the meaning: never folded
    assert "Frobnication of the notify table failed" in entry["signature"]
    assert "31337" not in entry["signature"]  # the envelope (pid, time, file:line, tid) is not
    assert entry["ranks"] == [1]
    assert entry["first_time"] == "2025-03-04T10:11:05.123"
    assert report["verdict"]["status"] != "no_failure", NOT_HEALTHY
    assert code != 0, NOT_HEALTHY


def test_an_unknown_python_exception_ends_a_traceback(tmp_path: Path) -> None:
    last = UNKNOWN_EXCEPTION.format(req=262144)
    traceback = [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/job/train.py", line 88, in <module>',
        "[rank3]:     main()",
        '[rank3]:   File "/job/kernels.py", line 12, in matmul',
        "[rank3]:     raise OutOfResources(self.shared, max_shared, 'shared memory')",
        f"[rank3]: {last}",
    ]
    job = write_job(tmp_path / "job", {3: traceback})
    code, report = analyze_json(job)
    [entry] = report["unexplained"]
    assert entry["marker"] == "python-exception"
    assert entry["signature"] == ("triton.runtime.errors.OutOfResources: out of resource: shared memory, "
                                  "Required: <n>, Hardware limit: <n>. Reducing block sizes or "
                                  "`num_stages` may help.")
    assert entry["ranks"] == [3]
    assert entry["first"]["text"] == f"[rank3]: {last}"
    assert report["verdict"]["status"] != "no_failure", NOT_HEALTHY
    assert code != 0, NOT_HEALTHY


def test_the_terminal_report_lists_them_literally(tmp_path: Path) -> None:
    line = "[rank1]:[E1121 10:00:09.123456789 Frob.cpp:12] [Rank 1] frobnicator [gone] after 3 tries"
    job = write_job(tmp_path / "job", {1: [line]})
    result = RUNNER.invoke(app, ["analyze", str(job)])
    out = result.stdout
    assert "Unexplained errors (no rule knows these): 1 message, 1 line" in out
    assert "[c10-error] frobnicator [gone] after <n> tries" in out
    assert line in out  # the evidence line, `[rank1]` and `[gone]` included: no markup was eaten
    assert "rank 1 on gpu-node-00" in out
    assert "triage rules new --from-line '" in out


# --- signatures fold the same message from every rank ----------------------------------------------

def test_the_same_message_from_several_ranks_folds_into_one_signature(tmp_path: Path) -> None:
    extra = {r: ["", UNKNOWN_NCCL_WARN.format(host=f"gpu-node-0{r // 2}", pid=4400 + r, tid=5000 + r,
                                              dev=r % 2, peer=(r + 1) % 8, port=50000 + r, n=3 + r)]
             for r in range(8)}
    extra[5].append(UNKNOWN_HCCL.format(pid=9105, sec=7, dev=5))
    extra[6].append(UNKNOWN_HCCL.format(pid=9106, sec=6, dev=6))
    job = write_job(tmp_path / "job", extra, ranks=8)
    _, report = analyze_json(job)
    entries = {e["marker"]: e for e in report["unexplained"]}
    assert len(report["unexplained"]) == 2
    warn, hccl = entries["nccl-warn"], entries["cann-error"]
    assert warn["count"] == 8 and warn["ranks"] == list(range(8))
    assert warn["hosts"] == ["gpu-node-00", "gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert report["unexplained"][0] is not None and report["unexplained"][0]["marker"] == "nccl-warn"
    assert hccl["count"] == 2 and hccl["ranks"] == [5, 6]
    assert hccl["first"]["source"].endswith("rank6.log")  # the earliest by time, not by rank


# --- no false positives ----------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", ["real-gloo-clean", "real-detail-clean", "nccl24-no-failure"])
def test_healthy_fixtures_have_no_unexplained_errors(fixture: str) -> None:
    code, report = analyze_json(FIXTURES / fixture / "logs")
    assert report["unexplained"] == []
    assert report["verdict"]["status"] == "no_failure"
    assert code == 0


def test_a_healthy_noisy_job_has_none(tmp_path: Path) -> None:
    job = write_job(tmp_path / "job", {})
    code, report = analyze_json(job)
    assert report["unexplained"] == []
    assert report["verdict"]["status"] == "no_failure"
    assert code == 0


@pytest.mark.parametrize("line", [
    "gpu-node-03:4412:4590 [3] NCCL INFO NET/IB : Got completion error count 0 (retrying)",
    "[rank1]:[W820 15:32:50.432015230 ProcessGroupNCCL.cpp:4115] [PG 0 (default_pg) Rank 1] error: exit code 1",
    "[I ProcessGroupNCCL.cpp:1] RuntimeError: nothing",
    "W0820 15:32:41.474000 2179911 torch/distributed/run.py:793] worker exited with exit code 1",
    "/opt/venv/lib/python3.11/site-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated",
    "/opt/x.py:3: FutureWarning: Segmentation fault handling changes in 2.0",
    "2024-08-20 15:33:01,356 INFO train: rank 1/8 ERROR rate 0.0, exit code 1 last time",
    "2026-11-21 00:35:00,657 WARNING train.data: loader crashed (exit code 137), restarting it",
    "[INFO] HCCL(3035894,python):2024-11-05-21:06:03.662.708 [hccl_communicator.cc:512][3035894]init ok EI0002",
    "[WARNING] HCCL(3035894,python):2024-11-05-21:06:03.662.708 [x.cc:512][3035894]retrying [ERROR] path",
    "[EVENT] HCCL(686,python):2025-10-23-07:52:59.191.363 [op_base.cc:951][8970]Entry-HcclAllReduce:tag[x]",
    "[gpu-node-01] launch env: RANK=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_DEBUG=WARN",
    "Process finished with exit code 0",
    "    raise RuntimeError('worker exited with exit code 1')",
    "Aborted training early: the loss converged",
    "Killed 3 stale checkpoints",
    "Error: could not open /data/shard-0003.bin, using the next one",
    "step 10/20 exitcode 0 errors 0",
])
def test_lines_whose_format_says_no_error_are_never_marked(line: str) -> None:
    assert unexplained(events_of(line + "\n")) == []


# --- what counts, and what a rule already explains -------------------------------------------------

@pytest.mark.parametrize(("line", "marker", "family", "signature"), [
    ("[2025-01-01 10:00:00] gpu-node-03:4412:4590 [3] misc/foo.cc:50 NCCL WARN Unknown problem 7",
     "nccl-warn", "nccl", "Unknown problem <n>"),
    ("[rank3]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 3] odd 4",
     "c10-error", "pytorch", "odd <n>"),  # the process-group prefix is envelope too
    ("[E ProcessGroupNCCL.cpp:414] something odd at 0x7f3a2c001000", "c10-error", "pytorch",
     "something odd at <addr>"),
    ("[rank0]:[F1121 00:30:13.392242200 Logging.cpp:100] Check failed: ok", "c10-error", "pytorch",
     "Check failed: ok"),
    ("E0709 17:05:38.162555 1234 torch/distributed/elastic/agent/server/api.py:12] agent lost 2 workers",
     "c10-error", "torchrun", "agent lost <n> workers"),
    ("[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.025 [task_info.cc:1170]57288 Frob: 3",
     "cann-error", "hccl", "RUNTIME Frob: <n>"),
    ("[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02999 DIST frob failed.",
     "cann-error", "hccl", "ERR02999 DIST frob failed."),
    ("EI0077: [PID: 7277] 2024-11-28-11:59:30.645.648 Something unknown happened.", "error-code", "hccl",
     "EI0077: [PID: <n>] <time> Something unknown happened."),
    ("terminate called after throwing an instance of 'c10::Error'", "terminate", "pytorch",
     "terminate called after throwing an instance of 'c10::Error'"),
    ("terminate called without an active exception", "terminate", "pytorch",
     "terminate called without an active exception"),
    ("Segmentation fault (core dumped)", "fatal-signal", "python", "Segmentation fault (core dumped)"),
    ("bash: line 1:  5644 Aborted                 (core dumped) python3 train.py", "fatal-signal", "python",
     "Aborted (core dumped)"),
    ("srun: error: Unable to create step for job 1234: Requested node configuration is not available",
     "slurm-error", "slurm", "srun: error: Unable to create step for job <n>: Requested node configuration "
     "is not available"),
    ("[2024-05-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python', 'x'] exits with return "
     "code = 1", "log-error", "python", "[launch.py:<n>:sigkill_handler] ['python', 'x'] exits with return "
     "code = <n>"),
    ("2024-05-01 10:00:00,123 - train - ERROR - could not save checkpoint 12", "log-error", "python",
     "could not save checkpoint <n>"),
    ("mpirun noticed that process rank 3 with PID 0 on node n1 exited on signal 9 (Killed). Exit code: 137",
     "exit-status", "python",
     "mpirun noticed that process rank <n> with PID <n> on node n1 exited on signal <n> (Killed). Exit code: <n>"),
])
def test_each_marker(line: str, marker: str, family: str, signature: str) -> None:
    [event] = unexplained(events_of(line + "\n"))
    assert (event.fields["marker"], event.family, event.fields["signature"]) == (marker, family, signature)
    assert event.rule_id == "unclassified-error"
    assert event.evidence.text == line


def test_the_writer_and_the_time_come_from_the_line_as_for_any_event() -> None:
    line = ("[2025-01-01 10:00:00] gpu-node-03:4412:4590 [3] misc/foo.cc:50 NCCL WARN Unknown problem 7")
    [event] = unexplained(events_of("[default3]:[rank11]:hello\n\n" + line + "\n"))
    assert (event.identity.host, event.identity.pid) == ("gpu-node-03", 4412)
    assert event.time is not None and event.time_has_year
    [c10] = unexplained(events_of("[default1]:[rank9]:[E709 17:05:38.1 x.cpp:1] odd\n"))
    assert (c10.identity.rank, c10.identity.local_rank) == (9, 1)
    assert c10.time is not None and not c10.time_has_year


def test_a_line_a_rule_matched_is_not_also_unexplained() -> None:
    known = ("gpu-node-03:4412:4590 [3] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by "
             "remote peer gpu-node-07<52011>")
    events = events_of(known + "\n")
    assert [e.rule_id for e in events] == ["nccl-socket-closed-by-peer"]


def test_lines_of_a_rules_record_are_explained_with_it() -> None:
    # The ChildFailedError record: its `exitcode  : 1` line is a field of the rule, not an exit status.
    record = ["Root Cause (first observed failure):", "[0]:", "  time      : 2026-08-13_08:21:19",
              "  host      : node1", "  rank      : 6 (local_rank: 6)", "  exitcode  : 1 (pid: 1246013)",
              "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs"]
    text = "\n".join(record) + "\n"
    assert unexplained(events_of(text)) == []
    for size in (1, 17, 64):  # the record split across reads holds too
        assert unexplained(events_of(text, pieces=size)) == []


def test_a_known_exception_after_a_traceback_stays_the_rules() -> None:
    text = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: bad shape\n"
    events = events_of(text)
    assert [e.rule_id for e in events] == ["python-exception"]


def test_a_traceback_is_followed_across_interleaved_ranks_and_reads() -> None:
    lines = [
        "[default1]:[rank1]: Traceback (most recent call last):",
        "[default0]:[rank0]: Traceback (most recent call last):",
        '[default1]:[rank1]:   File "/x/train.py", line 3, in <module>',
        '[default0]:[rank0]:   File "/x/train.py", line 3, in <module>',
        "[default0]:[rank0]:     raise ValueError('boom')",
        "[default0]:[rank0]: ValueError: boom",
        "[default1]:[rank1]: " + UNKNOWN_EXCEPTION.format(req=99),
        "Traceback (most recent call last):",
        '  File "x", line 1, in <module>',
        "StopIteration",
    ]
    text = "\n".join(lines) + "\n"
    whole = sorted((e.evidence.line, e.rule_id, e.fields.get("marker"), e.identity.rank)
                   for e in events_of(text))
    assert whole == [(6, "python-exception", None, 0), (7, "unclassified-error", "python-exception", 1),
                     (10, "unclassified-error", "python-exception", None)]
    for size in (1, 5, 40, 200):
        split = [(e.evidence.line, e.rule_id, e.fields.get("marker"), e.identity.rank)
                 for e in events_of(text, pieces=size)]
        assert sorted(split) == sorted(whole), size


def test_a_c10_record_head_takes_its_text_from_the_next_line() -> None:
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] \n"
            "\t - frobnicated the collective #3028 (count from 1)\n")
    [event] = unexplained(events_of(text))
    assert event.fields["signature"] == "- frobnicated the collective #<n> (count from <n>)"
