"""Tests for accuracy/ascendfd/: the re-implementation of ascend-fd's root-cluster rules.

Each test writes a tiny hand-made bundle of plogs and checks the branch that the ascend-fd source
(mind-cluster pkg/diag/root_cluster/utils.py ErrorChecker.check) takes on it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def afd() -> ModuleType:
    package = ROOT / "accuracy" / "ascendfd"
    spec = importlib.util.spec_from_file_location(
        "ascendfd", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ascendfd"] = mod
    spec.loader.exec_module(mod)
    return mod


IDENT = "10.0.0.1%eth0_60000_0_1700000000000000"


def _t(sec: float) -> str:
    """A plog timestamp, 2025-01-01-00:MM:SS.mmm.uuu."""
    m, s = divmod(sec, 60)
    whole = int(s)
    frac = round((s - whole) * 1_000_000)
    return f"2025-01-01-00:{int(m):02d}:{whole:02d}.{frac // 1000:03d}.{frac % 1000:03d}"


def _line(level: str, pid: int, sec: float, text: str) -> str:
    return f"[{level}] HCCL({pid},python):{_t(sec)} [x.cc:1][{pid}]{text}\n"


def _init(
    pid: int, rank: int, dev: int, n: int = 4, server: str = "10.0.0.1", exec_timeout: int = 1800
) -> list[str]:
    return [
        _line(
            "INFO", pid, 0.1, f"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [{exec_timeout}]s"
        ),
        _line(
            "INFO",
            pid,
            1,
            f"[HCCL_TRACE]HcclCommInitRootInfo success,take time [1000]us, rankNum[{n}], rank[{rank}], "
            f"rootInfo identifier[{IDENT}], server[{server}], logicDevId[{dev}], phydevId[{dev}], "
            f"deviceIp[192.168.0.{10 + dev}]",
        ),
    ]


def _notify(pid: int, sec: float, remote: int) -> list[str]:
    h = "[TaskExceptionHandler][Callback]Task run failed, "
    return [
        _line(
            "ERROR",
            pid,
            sec,
            h
            + "base information is streamID:[1], taskID[2], taskType[Notify Wait], tag[AllReduce_hccl_world_group].",
        ),
        _line(
            "ERROR",
            pid,
            sec + 0.001,
            h + f"para information is notify id:[0x1], stage:[ffffffff], remote rank:[{remote}].",
        ),
        _line(
            "ERROR",
            pid,
            sec + 0.002,
            h + f"groupRank information is group:[{IDENT}], rankSize[4], rankId[0].",
        ),
    ]


def _write(tmp: Path, per_pid: dict[int, list[str]]) -> Path:
    plog = tmp / "bundle" / "logs" / "node1" / "debug" / "plog"
    plog.mkdir(parents=True)
    for pid, lines in per_pid.items():
        (plog / f"plog-{pid}_20250101000000000.log").write_text("".join(lines))
    return tmp / "bundle"


def _ids(res: dict[str, Any]) -> list[str]:
    return sorted(d.device_id for d in res["root_devices"])


def test_no_error_anywhere_is_102(afd: ModuleType, tmp_path: Path) -> None:
    b = _write(tmp_path, {100 + r: _init(100 + r, r, r) for r in range(4)})
    res = afd.diagnose_bundle(b)
    assert res["code"] == 102
    assert res["root_cause_device"] == ["Unknown Device"]


def test_cqe_most_common_target_is_the_root(afd: ModuleType, tmp_path: Path) -> None:
    lines = {100 + r: _init(100 + r, r, r) for r in range(4)}
    for r in range(3):  # ranks 0-2 see error CQEs toward device 3's IP; device 3 toward device 0's
        lines[100 + r].append(
            _line("ERROR", 100 + r, 10 + r, "cqe error status[12], remoteIP:[192.168.0.13]")
        )
    lines[103].append(_line("ERROR", 103, 13, "cqe error status[12], remoteIP:[192.168.0.10]"))
    res = afd.diagnose_bundle(_write(tmp_path, lines))
    assert res["code"] == 116
    assert _ids(res) == ["3"]


def test_cluster_exception_location_names_the_root(afd: ModuleType, tmp_path: Path) -> None:
    lines = {100 + r: _init(100 + r, r, r) for r in range(4)}
    loc = "[HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[10.0.0.1/2], Arrival Time:[x], Discoverer:[10.0.0.1/1], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. x"
    for r in (0, 1, 3):
        lines[100 + r].append(_line("ERROR", 100 + r, 20 + r, loc))
        lines[100 + r].extend(_notify(100 + r, 21 + r, 2))
    res = afd.diagnose_bundle(_write(tmp_path, lines))
    assert res["code"] == 126
    assert _ids(res) == ["2"]


def test_cluster_exception_on_a_non_root_server_is_missed(afd: ModuleType, tmp_path: Path) -> None:
    # An A2/A3 'Entry-HcclCommInitRootInfo' line goes through the A5 branch, whose server id is the
    # *root's* host ip[...]; the location 10.0.0.2/2 is then not found and the rule falls through.
    lines: dict[int, list[str]] = {}
    for r in range(4):
        pid = 100 + r
        lines[pid] = [
            _line(
                "INFO",
                pid,
                1,
                f"Entry-HcclCommInitRootInfoInner:ranks[4], rank[{r}], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[{IDENT}], deviceLogicId[{r}]",
            ),
        ]
        if r != 2:
            lines[pid].append(
                _line(
                    "ERROR",
                    pid,
                    20 + r,
                    "[HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[10.0.0.2/2], ExceptionType:[Heartbeat Lost Occurred]",
                )
            )
    res = afd.diagnose_bundle(_write(tmp_path, lines))
    assert res["code"] != 126


def test_ranks_without_notify_timeout_are_the_root(afd: ModuleType, tmp_path: Path) -> None:
    lines = {100 + r: _init(100 + r, r, r) for r in range(4)}
    for r in (0, 1, 2):
        lines[100 + r].extend(_notify(100 + r, 30 + r, 3))
    res = afd.diagnose_bundle(_write(tmp_path, lines))
    assert res["code"] == 112
    assert _ids(res) == ["3"]


def test_spread_above_exec_timeout_gives_the_last_device(afd: ModuleType, tmp_path: Path) -> None:
    lines = {100 + r: _init(100 + r, r, r, exec_timeout=60) for r in range(4)}
    for r, sec in ((0, 30), (1, 31), (2, 200), (3, 32)):
        lines[100 + r].extend(_notify(100 + r, sec, (r + 1) % 4))
    res = afd.diagnose_bundle(_write(tmp_path, lines))
    assert res["code"] == 110
    assert _ids(res) == ["2"]
    # the same spread under the default 1800 s is not enough: the notify wait graph decides instead
    lines = {100 + r: _init(100 + r, r, r) for r in range(4)}
    for r, sec in ((0, 30), (1, 31), (2, 200), (3, 32)):
        lines[100 + r].extend(_notify(100 + r, sec, (r + 1) % 4))
    res2 = afd.diagnose_bundle(_write(tmp_path / "b", lines))
    assert res2["code"] == 124  # a 0->1->2->3->0 cycle


def test_no_plog_is_115(afd: ModuleType, tmp_path: Path) -> None:
    b = tmp_path / "bundle" / "logs"
    b.mkdir(parents=True)
    (b / "train-node1.log").write_text(
        "EI0002: The wait execution of the Notify register times out.\n"
    )
    assert afd.diagnose_bundle(tmp_path / "bundle")["code"] == 115
