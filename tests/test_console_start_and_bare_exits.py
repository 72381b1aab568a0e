"""torchrun's console read as a whole log, and the launcher's exit records read for what they are.

A console that holds torchrun's start banner holds the job's start: a failure there with init behind
the ranks and no collective completed is at the first collective (operator_load), one before any rank
got past init is comm_init, and a rank's own error between init and the first collective is
operator_load too. A launcher's record of an exit is not a failure of its own where nothing of the
rank is in the excerpt (a bare `exitcode: 1`), where the launcher had sent it its closing signal, or
where it is a watchdog's SIGABRT among others; a hard signal nobody sent still is. The lines are those
of real torch 2.13 runs (torchrun + gloo on CPU; docs/formats.md §2.3, §2.4, §8).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage.api import analyze
from triage.report.json_format import to_dict

AGENT = "torch/distributed/elastic/multiprocessing/api.py"
BANNER = (
    "W1125 15:57:48.817000 13071 torch/distributed/run.py:874] \n"
    "W1125 15:57:48.817000 13071 torch/distributed/run.py:874] *****************************************\n"
    "W1125 15:57:48.817000 13071 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable "
    "for each process to be 1 in default, to avoid your system being overloaded, please further tune the "
    "variable for optimal performance in your application as needed. \n"
    "W1125 15:57:48.817000 13071 torch/distributed/run.py:874] *****************************************\n"
)
STARTING = "".join(f"[default{r}]:2026-11-25 15:57:51,0{r}8 INFO train: rank {r}/4 (local_rank {r}) starting on vm, "
                   f"pid 1307{r}\n" for r in range(4))


def _timeout(rank: int, op: str = "recv") -> str:
    """A gloo wait that timed out in the first broadcast, as the tee'd console shows it."""
    p = f"[default{rank}]:[rank{rank}]: "
    return (f"{p}Traceback (most recent call last):\n"
            f"{p}  File \"/work/real_job.py\", line 177, in main\n"
            f"{p}    dist.broadcast(p.data, src=0)\n"
            f"{p}  File \"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line 3151, "
            f"in broadcast\n"
            f"{p}    work.wait()\n"
            f"{p}RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
            f"Timed out waiting 5000ms for {op} operation to complete\n")


def _record(rank: int, code: int, signal: str = "") -> str:
    pid = 13070 + rank
    if signal:
        number = {"SIGTERM": 15, "SIGKILL": 9, "SIGABRT": 6}[signal]
        code_line = f"  exitcode  : {code} (pid: {pid})  ({signal})\n"
        why = f"  traceback : Signal {number} ({signal}) received by PID {pid}\n"
    else:
        code_line = f"  exitcode  : {code} (pid: {pid}) \n"
        why = "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    return ("  time      : 2026-11-25_15:57:57\n  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n{code_line}  error_file: <N/A>\n{why}")


def _summary(root: tuple[int, int, str], others: list[tuple[int, int, str]]) -> str:
    """torchrun's ChildFailedError block: the other failures, then the root cause (the first reaped)."""
    text = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "============================================================\nreal_job.py FAILED\n"
            "------------------------------------------------------------\nFailures:\n")
    for i, (rank, code, signal) in enumerate(others, 1):
        text += f"[{i}]:\n" + _record(rank, code, signal)
    text += ("------------------------------------------------------------\nRoot Cause (first observed failure):\n"
             "[0]:\n" + _record(*root) + "============================================================\n")
    return text


def _closing(rank: int) -> str:
    return f"W1125 15:57:57.283000 13069 {AGENT}:1028] Sending process {13070 + rank} closing signal SIGTERM\n"


def _verdict(folder: Path, text: str, name: str = "console.log") -> dict[str, Any]:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    verdict: dict[str, Any] = to_dict(analyze([folder], jobs=1))["verdict"]
    return verdict


def _ranks(verdict: dict[str, Any]) -> list[int]:
    return [c["rank"] for c in verdict["culprits"]]


# --- A: torchrun's console holds the job's start -------------------------------------------------

HUNG_AT_FIRST = (_timeout(0, "send") + _timeout(2) + _timeout(3) + _closing(1)
                 + _summary((0, 1, ""), [(3, 1, ""), (1, -15, "SIGTERM"), (2, 1, "")]))


def test_a_console_with_torchruns_banner_is_a_whole_log(tmp_path: Path) -> None:
    # Init was behind the ranks (`[rankN]:`), no collective completed, and the console holds the start.
    verdict = _verdict(tmp_path, BANNER + STARTING + HUNG_AT_FIRST)
    assert verdict["phase"] == "operator_load"
    assert _ranks(verdict) == [1]


def test_the_same_failure_lines_without_the_banner_keep_their_own_phase(tmp_path: Path) -> None:
    # An excerpt: absence of a completed collective is no evidence; gloo's wait says a collective ran.
    assert _verdict(tmp_path, HUNG_AT_FIRST)["phase"] == "execution"


INIT_EXIT = ("[default1]:2026-11-25 16:05:59,887 INFO train: rank 1/3 (local_rank 1) starting on vm, pid 13071\n"
             + _closing(0) + _closing(2)
             + f"E1125 16:06:00.239000 13069 {AGENT}:1002] failed (exitcode: 1) local_rank: 1 (pid: 13071) of "
               "binary: /venv/bin/python3\n"
             + _summary((1, 1, ""), [(0, -15, "SIGTERM"), (2, -15, "SIGTERM")]))


def test_a_bare_exit_in_a_console_that_holds_the_start_is_comm_init(tmp_path: Path) -> None:
    # No rank got as far as a line a rule knows; rank 1's tee'd output holds no traceback.
    verdict = _verdict(tmp_path, BANNER + INIT_EXIT)
    assert verdict["status"] == "diagnosed"
    assert _ranks(verdict) == [1]
    assert verdict["phase"] == "comm_init"


def test_a_python_error_before_init_in_a_console_that_holds_the_start_is_comm_init(tmp_path: Path) -> None:
    error = ("[default0]:Traceback (most recent call last):\n"
             "[default0]:  File \"/work/real_job.py\", line 140, in main\n"
             "[default0]:    assert shards, f\"rank {rank}: no dataset shards assigned\"\n"
             "[default0]:AssertionError: rank 0: no dataset shards assigned\n")
    tail = _closing(1) + _summary((0, 1, ""), [(1, -15, "SIGTERM")])
    verdict = _verdict(tmp_path, BANNER + error + tail)
    assert _ranks(verdict) == [0]
    assert verdict["phase"] == "comm_init"


# --- B: a rank's own error between init and the first collective, in a whole log ------------------

OWN_ERROR = ("2026-11-25 15:58:42,401 INFO train: process group ready: backend=gloo world_size=8\n"
             "[rank5]: Traceback (most recent call last):\n"
             "[rank5]:   File \"/work/real_job.py\", line 88, in inject\n"
             "[rank5]:     raise ValueError(\"checkpoint /ckpt/init.pt: unexpected key 'head.weight' in state_dict\")\n"
             "[rank5]: ValueError: checkpoint /ckpt/init.pt: unexpected key 'head.weight' in state_dict\n")


def test_an_own_error_before_the_first_collective_in_a_whole_file_is_operator_load(tmp_path: Path) -> None:
    # torchrun's --log-dir file of the rank: its output from its start, and no collective completed.
    verdict = _verdict(tmp_path, OWN_ERROR, "none_mvc4q6jk/attempt_0/1/stderr.log")
    assert _ranks(verdict) == [5]
    assert verdict["phase"] == "operator_load"


def test_the_same_error_in_a_paste_is_not_put_at_the_first_collective(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, OWN_ERROR, "rank5.txt")
    assert _ranks(verdict) == [5]
    assert verdict["phase"] != "operator_load"


# --- H: exit records that are not a failure of their own -----------------------------------------

def test_a_bare_exit_1_in_a_screen_excerpt_names_no_one(tmp_path: Path) -> None:
    # The root cause is the first process reaped: a victim whose traceback was cut off can be it.
    verdict = _verdict(tmp_path, _summary((0, 1, ""), [(1, -15, "SIGTERM"), (2, -15, "SIGTERM")]))
    assert verdict["status"] == "inconclusive"
    assert _ranks(verdict) == []


def test_a_rank_the_launcher_sent_its_closing_signal_is_a_victim_whatever_its_exit(tmp_path: Path) -> None:
    # Rank 5 was still alive when the agent stopped it; its `exitcode: 1` is the agent's doing.
    text = (_timeout(3) + _closing(4) + _closing(5)
            + _summary((3, 1, ""), [(4, -15, "SIGTERM"), (5, 1, "")]))
    verdict = _verdict(tmp_path, text)
    assert 5 not in _ranks(verdict)


def test_watchdog_aborts_of_several_ranks_name_no_one(tmp_path: Path) -> None:
    # Two ranks exited with SIGABRT (one after the agent's SIGTERM): the watchdog's aborts of the
    # ranks that waited, not one rank's own crash.
    text = ("[default0]:frame #4: <unknown function> + 0x129ecc (0x7f8fa7b29ecc in /lib/x86_64-linux-gnu/libc.so.6)\n"
            + _closing(0) + _closing(1) + _closing(2)
            + _summary((3, -6, "SIGABRT"), [(0, -6, "SIGABRT"), (1, -15, "SIGTERM"), (2, -15, "SIGTERM")]))
    verdict = _verdict(tmp_path, text)
    assert _ranks(verdict) == []


def test_one_ranks_abort_among_sigterms_is_its_own(tmp_path: Path) -> None:
    text = _summary((3, -6, "SIGABRT"), [(0, -15, "SIGTERM"), (1, -15, "SIGTERM"), (2, -15, "SIGTERM")])
    verdict = _verdict(tmp_path, text)
    assert verdict["status"] == "diagnosed"
    assert _ranks(verdict) == [3]


def test_a_sigkill_nobody_sent_is_its_own_in_an_excerpt(tmp_path: Path) -> None:
    text = _summary((1, 1, ""), [(2, -9, "SIGKILL"), (0, -15, "SIGTERM")])
    verdict = _verdict(tmp_path, text)
    assert _ranks(verdict) == [2]
