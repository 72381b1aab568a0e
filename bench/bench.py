"""How fast `triage analyze` reads a large job, against grep (and rg) over the same files, same run.

    python bench/bench.py [--hosts 128] [--gpus 8] [--noise-lines 2000] [--runs 3]

Generates once, under bench/out/, a job of hosts x gpus ranks logged with NCCL_DEBUG=INFO (torch
2.7 / NCCL 2.26 wording, training progress, one silent rank), warms the page cache, then times
each contender `--runs` times and keeps the median:

  grep -E        `grep -c -E -f PATTERNS`: every rule literal and error shape triage looks for, as one
                 extended regex (the baseline the issue names); output to a file, not /dev/null
                 (GNU grep stops at the first match when its output is /dev/null)
  grep -F        `grep -c -F -f LITERALS`: the literals alone, as fixed strings
  grep -F marks  `grep -c -F -f MARKERS`: the 31 literals of the error marks alone (what the open
                 world looks for), the other ratio the speed goal names
  rg -F          the same with ripgrep, when `rg` is installed
  triage         `triage analyze --quiet -o json=FILE` (the whole pipeline, the JSON report written),
                 on all cores, on one (`--jobs 1`), and on one with the Python fallback engine
  floor          `bench/floor.py`: what every analysis costs before its first line is looked at
                 (start-up, imports, rules, reading, decoding, the candidate pass), with triage's
                 own code: the least any triage in Python could take on this input
  triage --help  and the README's bundled example, for start-up cost

CPU time is user + system of the process and its children (wait4), so worker processes count. It
prints a table with the ratios to grep -E, checks that triage named the silent rank, and writes the
figures to bench/out/results.json. Nothing here is a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # the job generator lives with the tests (tests/generators/)

from generators import jobgen  # noqa: E402

from triage.parse.marks import MARKER_LITERALS, MARKER_SHAPES  # noqa: E402
from triage.rules import load_rules  # noqa: E402

_ERE_SPECIAL = set(".[]()*+?{}|^$\\")


@dataclass
class Timing:
    wall: float
    cpu: float
    peak_mb: float
    returncode: int


def run_once(cmd: list[str], env: dict[str, str] | None = None, stdout: Path | None = None) -> Timing:
    """One run: wall time, CPU of the process and its children, and its peak RSS (wait4)."""
    sink = stdout.open("wb") if stdout else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout:
            sink.close()  # type: ignore[union-attr]
    # ru_maxrss is in KiB on Linux; a child forked from this driver starts with the driver's RSS
    # (exec keeps the high-water mark), so a figure near the driver's own is a floor, not a peak.
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def timed(cmd: list[str], runs: int, env: dict[str, str] | None = None,
          stdout: Path | None = None) -> Timing:
    times = [run_once(cmd, env, stdout) for _ in range(runs)]
    return Timing(statistics.median(t.wall for t in times), statistics.median(t.cpu for t in times),
                  max(t.peak_mb for t in times), times[-1].returncode)


def ere_escape(literal: str) -> str:
    return "".join("\\" + c if c in _ERE_SPECIAL else c for c in literal)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=128)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--noise-lines", type=int, default=2000)
    ap.add_argument("--culprit", type=int, default=777)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    job = out / f"job-{args.hosts}x{args.gpus}-{args.noise_lines}"
    if not job.exists():
        print(f"generating {job} …", file=sys.stderr)
        jobgen.generate(job, hosts=args.hosts, gpus=args.gpus, era="2.6", fault="silent",
                        culprit=args.culprit, noise_lines=args.noise_lines, layout="torchrun")
    files = sorted(str(p) for p in job.rglob("*") if p.is_file())
    size_mb = sum(Path(f).stat().st_size for f in files) / 1e6
    lines = sum(1 for f in files for _ in open(f, "rb"))  # noqa: SIM115
    literals = sorted({lit for r in load_rules() for lit in r.prefilter} | set(MARKER_LITERALS))
    literal_file, pattern_file = out / "literals.txt", out / "patterns.txt"
    marker_file = out / "markers.txt"
    literal_file.write_text("\n".join(literals) + "\n")
    marker_file.write_text("\n".join(sorted(MARKER_LITERALS)) + "\n")
    pattern_file.write_text("\n".join([ere_escape(lit) for lit in literals] + list(MARKER_SHAPES)) + "\n")

    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    triage = [sys.executable, "-m", "triage"]
    report = out / "triage-report.json"
    # As an installed triage runs: with its bytecode cached (a pip install compiles it; a checkout
    # under PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run).
    installed = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    python_engine = {**installed, "TRIAGE_ENGINE": "python"}
    contenders: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "grep -E": (["grep", "-c", "-E", "-f", str(pattern_file), *files], None),
        "grep -F": (["grep", "-c", "-F", "-f", str(literal_file), *files], None),
        "grep -F marks": (["grep", "-c", "-F", "-f", str(marker_file), *files], None),
    }
    if shutil.which("rg"):
        contenders["rg -F"] = (["rg", "-c", "-F", "-f", str(literal_file), *files], None)
    analyze = [*triage, "analyze", "--quiet", "-o", f"json={report}", str(job)]
    run_once([*triage, "--help"], installed)  # writes the bytecode cache
    contenders["floor"] = ([sys.executable, str(HERE / "floor.py"), str(job)], installed)
    contenders["triage (all cores)"] = (analyze, installed)
    contenders["triage --jobs 1"] = ([*analyze, "--jobs", "1"], installed)
    contenders["triage --jobs 1, Python engine"] = ([*analyze, "--jobs", "1"], python_engine)

    results: dict[str, Timing] = {}
    for name, (cmd, env) in contenders.items():
        results[name] = timed(cmd, args.runs, env, stdout=out / "contender.out")
        print(f"  {name}: {results[name].wall:.2f} s", file=sys.stderr)
    verdict = json.loads(report.read_text())["verdict"]
    culprits = [c["rank"] for c in verdict["culprits"] if c["kind"] == "rank"]
    startup = {
        "triage --help": timed([*triage, "--help"], max(args.runs, 5), installed),
        "triage analyze (README example)": timed(
            [*triage, "analyze", str(ROOT / "examples" / "job-2x8-hang" / "logs")], max(args.runs, 5),
            installed),
    }

    base, fixed = results["grep -E"], results["grep -F"]
    print(f"\n{len(files)} files, {size_mb:.0f} MB, {lines:,} lines, {args.hosts * args.gpus} ranks, "
          f"{len(literals)} literals + {len(MARKER_SHAPES)} shapes; {os.cpu_count()} CPUs; median of {args.runs}\n")
    print(f"{'':32s} {'wall s':>7s} {'CPU s':>6s} {'MB/s':>5s} {'CPU/grep-E':>11s} {'CPU/grep-F':>11s} "
          f"{'wall/grep-F':>12s} {'peak MB':>8s}")
    for name, t in results.items():
        print(f"{name:32s} {t.wall:7.2f} {t.cpu:6.2f} {size_mb / t.wall:5.0f} {t.cpu / base.cpu:10.2f}x "
              f"{t.cpu / fixed.cpu:10.2f}x {t.wall / fixed.wall:11.2f}x {t.peak_mb:8.0f}")
    for name, t in startup.items():
        print(f"{name:32s} {t.wall:7.2f} {t.cpu:6.2f}")
    one, floor = results["triage --jobs 1"], results["floor"]
    print(f"\ntriage --jobs 1: {one.cpu / fixed.cpu:.2f}x grep -F, "
          f"{one.cpu / results['grep -F marks'].cpu:.2f}x grep -F marks; the floor {floor.cpu / fixed.cpu:.2f}x "
          f"grep -F; triage above the floor {one.cpu - floor.cpu:.2f} CPU s ({(one.cpu - floor.cpu) / one.cpu:.0%})")
    print(f"verdict: {verdict['status']}, culprits {culprits} (expected [{args.culprit}])")

    figures = {
        "job": {"ranks": args.hosts * args.gpus, "files": len(files), "megabytes": round(size_mb, 1),
                "lines": lines},
        "cpus": os.cpu_count(),
        "runs": args.runs,
        "contenders": {name: {"wall_s": round(t.wall, 3), "cpu_s": round(t.cpu, 3), "peak_mb": round(t.peak_mb),
                              "cpu_vs_grep_E": round(t.cpu / base.cpu, 2),
                              "cpu_vs_grep_F": round(t.cpu / fixed.cpu, 2),
                              "wall_vs_grep_F": round(t.wall / fixed.wall, 2)}
                       for name, t in results.items()},
        "startup": {name: {"wall_s": round(t.wall, 3), "cpu_s": round(t.cpu, 3)} for name, t in startup.items()},
        "verdict": {"status": verdict["status"], "culprits": culprits, "expected": [args.culprit]},
    }
    (out / "results.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if culprits == [args.culprit] else 1


if __name__ == "__main__":
    sys.exit(main())
