"""A real bundle's expected.yaml: the injected truth, the verdict, and the principle that must decide."""

from __future__ import annotations

from pathlib import Path

PHASES = {"init": "comm_init", "first": "operator_load", "step": "execution"}


def truth_of(spec: dict) -> dict:
    if spec["fault"] == "none":
        return {"fault": "none", "rank": None, "phase": None}
    return {"fault": spec["fault"], "rank": spec["rank"], "phase": PHASES[spec["phase"]]}


# The principle that must decide each bundle (the reasoning it was built for), and the principles
# whose evidence is there and points elsewhere, which must lose (more in tests/test_hypotheses_lose.py).
PRINCIPLES: dict[str, str] = {
    "real-gloo-skip-init-rank3": "named-by-tool",
    "real-detail-hang-rank2": "named-by-tool",
    "real-2node-subgroup-hang-rank4": "named-by-tool",
    "real-init-wrong-port-rank3": "named-by-tool",
    "real-gloo-sigkill-rank1": "first-failure",
    "real-gloo-exception-rank3": "first-failure",
    "real-gloo-segfault-rank2": "first-failure",
    "real-2node-sigkill-rank5": "first-failure",
    "real-init-exit-rank3": "first-failure",
    "real-first-oom-rank1": "first-failure",
    "partial-oom-rank2-culprit-files": "first-failure",
    "real-gloo-hang-rank2": "silent-rank",
    "real-2node-hang-rank6": "silent-rank",
    "real-first-hang-rank1": "silent-rank",
    "real-subgroup-hang-rank3": "silent-rank",
    "real-detail-mismatch-shape-rank1": "collective-mismatch",
    "real-mismatch-op-rank3": "collective-mismatch",
    "real-straggler-rank1": "late-arrival",
    "real-first-late-rank2": "late-arrival",
}
LOSES: dict[str, list[str]] = {}


def write_expected(dest: Path, name: str, desc: str, exp: dict, truth: dict,
                   extra: list[str] | None = None) -> None:
    def val(v: object) -> str:
        return "null" if v is None else str(v)

    lines = [f"description: {yaml_str(desc)}",
             f"made_by: tests/generators/make_real.py {name}",
             *(extra or []),
             "truth: {" + ", ".join(f"{k}: {val(v)}" for k, v in truth.items()) + "}",
             "args: {}",
             "expect:",
             f"  status: {exp['status']}"]
    if exp.get("phase"):
        lines.append(f"  phase: {exp['phase']}")
    if exp.get("category"):
        lines.append(f"  category: {exp['category']}")
    if exp.get("culprits"):
        lines.append("  culprits:")
        lines += [f"    - {{kind: rank, rank: {r}}}" for r in exp["culprits"]]
    if exp.get("culprits_exact"):
        lines.append("  culprits_exact: true")
    if name in PRINCIPLES:
        lines.append(f"  principle: {PRINCIPLES[name]}")
    if name in LOSES:
        lines.append(f"  principle_loses: [{', '.join(LOSES[name])}]")
    (dest / "expected.yaml").write_text("\n".join(lines) + "\n")


def yaml_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
