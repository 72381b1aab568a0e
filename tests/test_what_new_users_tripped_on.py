"""Inputs that misled a new user (issue: "What a new user tripped on"): the report must not pass
them off as a normal job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from triage.api import NoInput, analyze

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_an_empty_file_is_no_evidence_not_health(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("")
    with pytest.raises(NoInput, match="empty"):
        analyze([tmp_path / "rank0.log"])


def test_unrelated_jobs_in_one_folder_are_told_apart() -> None:
    report = analyze([FIXTURES / "nccl24-silent-rank11" / "logs", FIXTURES / "real-gpu-nccl2289-job-hang-rank2" / "logs"])
    assert report.verdict.reasoning.startswith("These logs look like more than one job")
    assert "4 ranks for 4 processes, 16 ranks for 16 processes" in report.verdict.reasoning
    assert report.verdict.missing[0].startswith("one job's logs at a time")


@pytest.mark.parametrize("bundle", ["nccl24-silent-rank11", "ascendfd-aicpu-notify", "real-gpu-nccl2289-job-hang-rank2"])
def test_one_job_is_not_called_several(bundle: str) -> None:
    """A long job's init and its failure a day later (ascend-fd's aicpu case) are one run."""
    assert "more than one job" not in analyze([FIXTURES / bundle / "logs"]).verdict.reasoning


@pytest.mark.parametrize(("bundle", "code"), [("nccl24-no-failure", 0), ("nccl24-silent-rank11", 1)])
def test_a_reader_that_stops_reading_does_not_change_the_exit_code(bundle: str, code: int) -> None:
    """`triage analyze … | head`: the pipe is closed before triage writes (it reads the logs first)."""
    proc = subprocess.Popen([sys.executable, "-m", "triage", "analyze", str(FIXTURES / bundle / "logs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == code
    assert b"Traceback" not in proc.stderr.read()
