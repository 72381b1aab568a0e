"""Who wrote a line of a launcher console that interleaves several workers, and who wrote a file of
torchrun's --log-dir layout: real-shaped torchrun 2.13 + gloo output, written to disk."""

from __future__ import annotations

from pathlib import Path

from triage.api import analyze
from triage.identity import about_another
from triage.model import Status

BANNER = ("W1125 15:59:56.576000 17293 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment "
          "variable for each process to be 1 in default, to avoid your system being overloaded, please "
          "further tune the variable for optimal performance in your application as needed. ")
GLOO = ("2026-11-25 16:00:07,{ms:03d} ERROR train: step 4 failed (RuntimeError: [/__w/pytorch/pytorch/third_party/"
        "gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to "
        "complete); writing emergency checkpoint")
AGENT = "{lvl}1125 16:00:{s} 17293 torch/distributed/elastic/multiprocessing/api.py:{line}] "


def _record(rank: int, pid: int, exitcode: int, when: str = "16:00:09") -> str:
    signal = "  (SIGTERM)" if exitcode == -15 else " "
    trace = (f"Signal 15 (SIGTERM) received by PID {pid}" if exitcode == -15
             else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    return (f"  time      : 2026-11-25_{when}\n  host      : localhost\n  rank      : {rank} (local_rank: {rank})\n"
            f"  exitcode  : {exitcode} (pid: {17345 + rank}){signal}\n  error_file: <N/A>\n"
            f"  traceback : {trace}\n")


def _console(culprit: int, workers: int, traceback: bool) -> str:
    """The console of `torchrun --nproc-per-node N` where `culprit` raised at step 4 (no --tee:
    the workers' output is unprefixed, but for the `[rankN]:` traceback torch's excepthook prints)."""
    lines = [BANNER]
    lines += [f"step {s} loss 1{s}.0" for s in range(4) for _ in range(workers)]
    lines.append("2026-11-25 16:00:02,115 ERROR train: step 4 failed (ValueError: invalid label -1 in batch 4 "
                 "(expected 0..9)); writing emergency checkpoint")
    lines += [GLOO.format(ms=121 + 10 * i) for i in range(workers - 1)]
    if traceback:
        lines += [f"[rank{culprit}]: Traceback (most recent call last):",
                  f'[rank{culprit}]:   File "/job/train.py", line 89, in inject',
                  f"[rank{culprit}]: ValueError: invalid label -1 in batch 4 (expected 0..9)"]
    others = [r for r in range(workers) if r != culprit]
    lines += [AGENT.format(lvl="W", s="08.968000", line=1028) + f"Sending process {17345 + r} closing signal SIGTERM"
              for r in others]
    lines.append(AGENT.format(lvl="E", s="09.037000", line=1002) + f"failed (exitcode: 1) local_rank: {culprit} "
                 f"(pid: {17345 + culprit}) of binary: /venv/bin/python3")
    lines += ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              "=" * 60, "train.py FAILED", "-" * 60, "Failures:"]
    text = "\n".join(lines) + "\n"
    for i, r in enumerate(others, 1):
        text += f"[{i}]:\n" + _record(r, 17345 + r, -15)
    text += "-" * 60 + "\nRoot Cause (first observed failure):\n[0]:\n" + _record(culprit, 17345 + culprit, 1, "16:00:08")
    return text + "=" * 60 + "\n"


def test_unprefixed_lines_of_a_console_of_several_workers_have_no_writer(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_console(2, 4, traceback=True), encoding="utf-8")
    report = analyze([tmp_path])
    (source,) = report.sources
    assert source.identity.rank is None  # the one `[rank2]:` traceback does not make it rank 2's file
    timeouts = [e for e in report.events if e.rule_id == "gloo-timed-out-waiting"]
    assert timeouts and all(e.identity.rank is None for e in timeouts)
    traceback = [e for e in report.events if e.identity.learnt_from.get("rank") == "[rankN]: prefix"]
    assert traceback and {e.identity.rank for e in traceback} == {2}
    # The others' timeouts no longer make rank 2 a victim: its own error, then torchrun's records.
    verdict = report.verdict
    assert verdict.status is Status.DIAGNOSED
    assert [c.rank for c in verdict.culprits] == [2]
    assert verdict.phase.value == "execution"  # the unknown writers' steps show collectives completed
    assert verdict.confidence < 0.7  # the other ranks' own lines are not known as theirs


def test_the_agents_lines_about_a_worker_are_filed_under_it_by_its_pid(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_console(2, 4, traceback=True), encoding="utf-8")
    report = analyze([tmp_path])
    signals = [e for e in report.events if e.rule_id in ("torchrun-signal-received", "torchrun-closing-signal")]
    assert signals and {e.identity.rank for e in signals} == {0, 1, 3}
    assert all(about_another(e) for e in signals)
    assert {e.identity.learnt_from["rank"] for e in signals} == {"pid in the launcher's record of the rank"}


def test_torchruns_records_name_the_first_failure_when_no_line_of_the_ranks_is_theirs(tmp_path: Path) -> None:
    # No `[rankN]:` line at all: only the launcher's records say who exited 1 and who was SIGTERMed.
    (tmp_path / "console.log").write_text(_console(1, 3, traceback=False), encoding="utf-8")
    report = analyze([tmp_path])
    assert all(e.identity.rank is None for e in report.events if e.rule_id == "gloo-timed-out-waiting")
    verdict = report.verdict
    assert verdict.status is Status.DIAGNOSED
    assert [c.rank for c in verdict.culprits] == [1]
    assert verdict.confidence < 0.7  # a bare exit code, not a line of its own


def test_a_console_of_one_worker_is_still_that_workers(tmp_path: Path) -> None:
    # nproc-per-node 1: the agent names one worker, so its unprefixed lines are the worker's.
    text = "\n".join([
        BANNER,
        "step 3 loss 1.0",
        GLOO.format(ms=121),
        "[rank3]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
        "Timed out waiting 5000ms for recv operation to complete",
        AGENT.format(lvl="E", s="09.037000", line=1002)
        + "failed (exitcode: 1) local_rank: 0 (pid: 17345) of binary: /venv/bin/python3",
    ]) + "\n"
    (tmp_path / "node3-console.log").write_text(text, encoding="utf-8")
    report = analyze([tmp_path])
    (source,) = report.sources
    assert source.identity.rank == 3
    assert {e.identity.rank for e in report.events if e.rule_id == "gloo-timed-out-waiting"} == {3}


TRACEBACK_OOM = (
    "2026-11-25 16:00:19,559 INFO train: starting\n"
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 98, in inject\n'
    "    torch.empty(32, 1 << 40)\n"
    "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
    "you tried to allocate 140737488355328 bytes. Error code 12 (Cannot allocate memory)\n"
)


def _logdir(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_one_workers_log_dir_file_names_its_rank_on_a_single_node(tmp_path: Path) -> None:
    # Failed before init: no `[rankN]:` prefix; only torchrun's layout says who wrote it.
    job = _logdir(tmp_path, {"none_h3wtm5t7/attempt_0/2/stderr.log": TRACEBACK_OOM,
                             "none_h3wtm5t7/attempt_0/2/stdout.log": ""})
    report = analyze([job])
    for source in report.sources:
        assert source.identity.rank == 2
        assert source.identity.local_rank == 2
        assert "single node" in source.identity.learnt_from["rank"]
        assert any("torchrun local rank" in note for note in source.notes)
    verdict = report.verdict
    assert verdict.status is Status.DIAGNOSED
    assert [c.rank for c in verdict.culprits] == [2]
    assert verdict.phase.value == "comm_init"
    assert verdict.confidence < 0.7  # local by nature, but only its own log, and the node assumed


def test_a_log_dir_file_takes_its_nodes_base_from_its_siblings(tmp_path: Path) -> None:
    # The second node of a job (ranks 4-7), its folder named by no host: its other workers'
    # `[rankN]:` lines give the base.
    files = {f"logs/none_5zz/attempt_0/{lr}/stderr.log":
             f"[rank{4 + lr}]: RuntimeError: Timed out waiting 5000ms for recv operation to complete\n"
             for lr in (0, 1, 3)}
    files["logs/none_5zz/attempt_0/2/stderr.log"] = TRACEBACK_OOM
    report = analyze([_logdir(tmp_path, files)])
    by_local = {s.identity.local_rank: s.identity for s in report.sources}
    assert by_local[2].rank == 6
    assert "node's base" in by_local[2].learnt_from["rank"]


def test_two_nodes_log_dirs_give_no_rank_from_local_ranks_alone(tmp_path: Path) -> None:
    files = {"a/none_aaa/attempt_0/0/stderr.log": TRACEBACK_OOM,
             "b/none_bbb/attempt_0/0/stderr.log": "step 3 loss 1.0\n"}
    report = analyze([_logdir(tmp_path, files)])
    assert all(s.identity.rank is None for s in report.sources)
    assert all(s.identity.local_rank == 0 for s in report.sources)


def test_a_node_whose_ranks_are_not_its_local_ranks_is_not_the_first(tmp_path: Path) -> None:
    # The agent's record says rank 5 is local rank 1 here: this is not a single node of ranks 0…
    console = ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-25_16:00:08\n"
               "  host      : localhost\n  rank      : 5 (local_rank: 1)\n  exitcode  : 1 (pid: 17347) \n"
               "  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs\n")
    files = {"none_x/attempt_0/2/stderr.log": TRACEBACK_OOM, "agent.log": console}
    report = analyze([_logdir(tmp_path, files)])
    (source,) = [s for s in report.sources if s.name.endswith("stderr.log")]
    assert source.identity.rank != 2
