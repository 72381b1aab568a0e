"""MindSpore on Ascend: its log envelopes, its surfaces of HCCL failures, and an msrun job (docs/formats.md §5.10).

The bundle tests/fixtures/mindspore-8r-init-killed-rank5 is an msrun job (msrun_log/scheduler.log and
worker_<rank>.log) whose rank 5 was killed inside HcclCommInitRootInfoConfig; its expected.yaml says what
was injected and where each line's text comes from (its verdict is checked by test_fixtures.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from triage.api import analyze
from triage.model import Identity
from triage.parse.marks import classify
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.report.json_format import to_dict
from triage.rules import load_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLE = FIXTURES / "mindspore-8r-init-killed-rank5"
MATCHER = Matcher(load_rules())

# MindSpore's C++ glog envelope and its Python logger (mindspore/log.py), as MindSpore 2.10 writes them.
DEVICE_LINE = ("[ERROR] DEVICE(2871937,fffd2efcf0e0,python):2026-03-05-10:30:31.512.337 "
               "[mindspore/ccsrc/plugin/ascend/res_manager/collective/ascend_communication_group.cc:354] "
               "InitByRootInfoConfig] HcclCommInitRootInfoConfig failed. Ascend Error Message:EI0006: [PID: 2871937] "
               "2026-03-05-10:30:31.498.120 Getting socket times out. Reason: Remote Rank did not send the data in "
               "time. Please check the reason for the rank being stuck")
MSRUN_LINE = ("[ERROR] ME(2871795:281473431314464,MainProcess):2026-03-05-10:20:38.004.117 "
              "[mindspore/parallel/cluster/process_entity/_api.py:365] Worker process 2871937 exit with exception. "
              "Error code: -9.")

# MindSpore's screen output when HCCL initialisation fails (github:mindspore-ai/docs
# tutorials/source_en/debug/error_analysis/cann_error_cases.md, EI0004 and EJ0001 cases): the EI/EJ lines of
# the `- Ascend Error Message:` block and of the `[CRITICAL] DEVICE(…)` line are the cause.
EI0004_BLOCK = """\
[WARNING] HCCL_ADPT(89999,ffffa5a47010,python):2023-01-16-20:43:48.480.465 [mindspore/ccsrc/plugin/device/ascend/hal/hccl_adapter/hccl_adapter.cc:47] GenHcclOptions] The environment variable DEPLOY_MODE is not set. Now set to default value 0

Traceback (most recent call last):
  File "train.py", line 379, in <module>
    train_net()
  File "/home/miniconda3/envs/ci/lib/python3.7/site-packages/mindspore/communication/management.py", line 161, in init
    init_hccl()
RuntimeError: Ascend collective communication initialization failed.

----------------------------------------------------
- Ascend Error Message:
----------------------------------------------------
EI0004: The ranktable is invalid,Reason:[The ranktable config devId is inconsistent with the local devId.]. Please check the configured ranktable. [{"server_count":"1","server_list":[{"device":[{"device_id":"1","device_ip":"192.168.100.101","rank_id":"0"}],"host_nic_ip":"reserve","server_id":"10.*.*.*"}],"status":"completed","version":"1.0"}]
        Solution: Try again with a valid cluster configuration in the ranktable file. Ensure that the configuration matches the operating environment.

(Please search "Ascend Error Message" at https://www.mindspore.cn for error code description)

----------------------------------------------------
- Framework Error Message: (For framework developers)
----------------------------------------------------
Init hccl graph adapter failed.
"""
EJ0001_LINES = """\
[CRITICAL] HCCL_ADPT(17381,ffff890145d0,python):2022-12-01-03:02:29.001.753 [mindspore/ccsrc/plugin/device/ascend/hal/hccl_adapter/hccl_adapter.cc:402] InitKernelInfoStore] Init hccl graph adapter failed.
[CRITICAL] DEVICE(17381,ffff890145d0,python):2022-12-01-03:02:29.002.576 [mindspore/ccsrc/plugin/device/ascend/hal/hardware/ascend_collective_comm_lib.cc:112] Initialize] Ascend collective communication initialization failed.Ascend Error Message:EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training process is running.
        Solution: Wait for 10s after killing the last training process and try again.
"""


def _events(text: str) -> list[Any]:
    return list(scan_text(MATCHER, "worker_0.log", Identity(), [text], ScanStats()))


# --- the envelope ------------------------------------------------------------------------------

def test_the_writer_pid_is_read_from_both_mindspore_envelopes() -> None:
    device = [e for e in _events(DEVICE_LINE + "\n") if e.rule_id == "hccl-mindspore-hccl-init-api-failed"]
    assert [e.identity.pid for e in device] == [2871937]
    assert device[0].identity.learnt_from["pid"] == "CANN log line"
    # msrun's own line: `ME(pid:thread,MainProcess)`; the writer is msrun, the worker is the `pid` field.
    (exit_event,) = [e for e in _events(MSRUN_LINE + "\n") if e.rule_id == "hccl-mindspore-msrun-process-exit"]
    assert exit_event.identity.pid == 2871795
    assert exit_event.fields["pid"] == "2871937" and exit_event.fields["exitcode"] == "-9"


def test_a_mindspore_error_line_is_marked_by_its_level_and_its_message_loses_the_envelope() -> None:
    mark = classify("[ERROR] DISTRIBUTED(2871802,fffd5bffe0e0,python):2026-03-05-10:21:02.640.311 "
                    "[mindspore/ccsrc/cluster/topology/meta_server_node.cc:98] Finalize] The meta server node can "
                    "not be finalized because there are still 3 alive nodes.")
    assert mark is not None and mark.marker == "cann-error"
    assert mark.message == "DISTRIBUTED The meta server node can not be finalized because there are still 3 alive nodes."
    lambda_mark = classify("[CRITICAL] DISTRIBUTED(1,ffff0000,python):2026-03-05-10:21:02.640.311 "
                           "[mindspore/ccsrc/cluster/init.cc:140] operator()] Something failed.")
    assert lambda_mark is not None and lambda_mark.message == "DISTRIBUTED Something failed."
    python_mark = classify(MSRUN_LINE.replace("Worker process", "Some process"))
    assert python_mark is not None and python_mark.marker == "cann-error"
    assert python_mark.message == "ME Some process 2871937 exit with exception. Error code: -9."
    assert classify(MSRUN_LINE.replace("[ERROR]", "[WARNING]")) is None
    # CANN's own envelope keeps its thread id out of the message, as before.
    cann = classify("[ERROR] HCCL(3035894,python):2024-11-05-21:06:03.662.708 [network_manager.cc:109][3035894]"
                    "call trace: hcclRet -> 7")
    assert cann is not None and cann.message == "HCCL call trace: hcclRet -> 7"


# --- the EI codes inside MindSpore's messages ----------------------------------------------------

def test_the_cann_codes_in_mindspore_messages_are_matched_by_their_own_rules() -> None:
    fired = {e.rule_id for e in _events(EI0004_BLOCK)}
    assert {"hccl-mindspore-comm-init-failed", "hccl-ranktable-invalid",
            "hccl-mindspore-hccl-adapter-init-failed"} <= fired
    fired = {e.rule_id for e in _events(EJ0001_LINES)}
    assert {"hccl-mindspore-comm-init-failed", "hccl-hccp-init-failed",
            "hccl-mindspore-hccl-adapter-init-failed"} <= fired
    device = _events(DEVICE_LINE + "\n")
    (socket,) = [e for e in device if e.rule_id == "hccl-socket-timeout-ei0006"]
    assert socket.fields["pid"] == "2871937"
    assert {e.rule_id for e in device} >= {"hccl-mindspore-hccl-init-api-failed"}


def test_mindspore_surfaces_of_a_failure_are_consequences_of_what_cann_said() -> None:
    kinds = {e.rule_id: e.kind.value for e in _events(EJ0001_LINES + DEVICE_LINE + "\n")}
    assert kinds["hccl-mindspore-comm-init-failed"] == "consequence"
    assert kinds["hccl-mindspore-hccl-init-api-failed"] == "consequence"
    assert kinds["hccl-hccp-init-failed"] == "error"
    assert kinds["hccl-socket-timeout-ei0006"] == "timeout"


# --- the msrun bundle ----------------------------------------------------------------------------

def _truth() -> dict[str, Any]:
    return yaml.safe_load((BUNDLE / "expected.yaml").read_text(encoding="utf-8"))["truth"]


def test_the_bundle_is_laid_out_as_msrun_writes_it() -> None:
    names = sorted(p.name for p in (BUNDLE / "logs" / "msrun_log").iterdir())
    assert names == ["scheduler.log"] + [f"worker_{r}.log" for r in range(_truth()["world_size"])]
    for rank in _truth()["ranks"]:
        text = (BUNDLE / "logs" / "msrun_log" / f"worker_{rank['rank']}.log").read_text(encoding="utf-8")
        assert f"({rank['pid']}," in text and f"This node {rank['rank']} rank id: {rank['rank']}\n" in text


def test_without_the_scheduler_log_the_rank_that_was_never_torn_down_is_the_culprit(tmp_path: Path) -> None:
    # Only the workers' logs: seven were torn down by the cluster (`Callback on exception is called`), rank
    # 5's log just stops inside HcclCommInitRootInfoConfig. Hung or killed cannot be told from these alone.
    for log in (BUNDLE / "logs" / "msrun_log").glob("worker_*.log"):
        shutil.copy(log, tmp_path / log.name)
    verdict = to_dict(analyze([tmp_path]))["verdict"]
    assert verdict["status"] == "diagnosed", verdict["reasoning"]
    assert [c["rank"] for c in verdict["culprits"] if c["kind"] == "rank"] == _truth()["culprit_ranks"]
    assert verdict["phase"] == "comm_init"


def test_msrun_worker_logs_are_ranks_of_one_host() -> None:
    report = to_dict(analyze([BUNDLE / "logs"]))
    workers = [s for s in report["sources"] if Path(s["name"]).name.startswith("worker_")]
    assert {s["host"] for s in workers} == {None}
    assert all(s["rank"] == int(Path(s["name"]).stem.split("_")[1]) for s in workers)
