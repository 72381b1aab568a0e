"""What schedulers consume, checked against their own grammar: Slurm host lists (against what real
Slurm 22.05 reads and writes, recorded in tests/data/slurm-hostlists.json, and live when `scontrol`
is installed), `scontrol` drain lines, kubectl lines and the node-condition patch (live with
`kubectl` when installed), the ranks; every report format showing the decision; the CLI on real
bundles; `repro` carrying the decision `analyze` gives.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import xmlschema
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from triage.api import analyze
from triage.cli import _register_repro, app
from triage.decision import emit
from triage.decision.hostlist import MAX_HOSTS, compress, expand, valid_name
from triage.model import Decision, Exclusion, Report
from triage.report import FORMATS, SCHEDULER_FORMATS, render

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text(encoding="utf-8"))
RECORDED = json.loads((ROOT / "tests" / "data" / "slurm-hostlists.json").read_text(encoding="utf-8"))
# One bundle per kind of decision: (fixture, action, hosts excluded)
BUNDLES = {
    "nccl24-ib-host3": ("requeue-excluding", ["gpu-node-03"]),  # a network fault naming a host
    "ascendfd-aicpu-notify": ("requeue-excluding", ["worker-0"]),  # a device fault
    "real-mismatch-op-rank3": ("stop", []),  # a collective mismatch
    "real-gloo-clean": ("none", []),
    "nccl24-only-host0-inconclusive": ("investigate", []),
}
EXIT = {"none": 0, "requeue": 75, "requeue-excluding": 76, "stop": 93, "investigate": 93}


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {name: analyze([str(FIXTURES / name)], jobs=1) for name in BUNDLES}


def _text(report: Report, fmt: str) -> str:
    out = io.StringIO()
    render(report, fmt, out, color=False)
    return out.getvalue()


# --- Slurm host lists ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", RECORDED["cases"], ids=[c["slurm"][:40] for c in RECORDED["cases"]])
def test_host_lists_as_slurm_reads_and_writes_them(case: dict[str, object]) -> None:
    names = case["names"]
    assert isinstance(names, list)
    assert expand(str(case["slurm"])) == case["slurm_expands"]  # Slurm's own lists, read as Slurm reads them
    assert compress(names) == case["triage"]
    assert sorted(case["slurm_expands_triage"]) == sorted(set(names))  # type: ignore[arg-type]
    assert sorted(expand(compress(names))) == sorted(set(names))


_DIGITS = st.integers(min_value=0, max_value=2000)
_HOST = st.builds(lambda prefix, number, width: prefix + (str(number).zfill(width) if width else str(number)),
                  st.sampled_from(["node", "gpu-", "n", "rack3-n", "a.b.c", "x"]), _DIGITS,
                  st.sampled_from([0, 0, 2, 3, 4])) | st.sampled_from(["login", "head-node", "x"])


@given(st.lists(_HOST, min_size=1, max_size=40))
def test_compress_then_expand_gives_the_hosts_back(hosts: list[str]) -> None:
    listed = compress(hosts)
    names = expand(listed)
    assert sorted(names) == sorted(set(hosts))
    assert len(names) == len(set(names))  # each once
    assert compress(list(reversed(hosts))) == listed  # the order given does not matter


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="scontrol not installed (apt-get install slurm-client)")
@settings(max_examples=25, deadline=None)
@given(hosts=st.lists(_HOST, min_size=1, max_size=30))
def test_real_slurm_expands_our_lists_to_the_hosts(hosts: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    conf = tmp_path_factory.getbasetemp() / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\nPartitionName=p Nodes=ALL\n",
                    encoding="utf-8")
    done = subprocess.run(["scontrol", "show", "hostnames", compress(hosts)], capture_output=True, text=True,
                          timeout=60, check=True, env=dict(os.environ, SLURM_CONF=str(conf)))
    assert sorted(done.stdout.split()) == sorted(set(hosts))


@pytest.mark.parametrize(("text", "says"), [
    ("n[3-1]", "runs backwards"), ("n[1-3]x", "text after a bracket"), ("n[1-3", "without its ']'"),
    ("n1-3]", "without its '['"), ("n[a-b]", "not a number"), ("a,,b", "empty name"), ("n[[1]]", "nested"),
    (f"n[0-{MAX_HOSTS}]", f"more than {MAX_HOSTS:,}"), ("a b", "not a host name"),
])
def test_a_bad_host_list_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        expand(text)


def test_names_slurm_cannot_list_are_refused() -> None:
    assert expand("rack[1-2]n[01-02]") == ["rack1n01", "rack1n02", "rack2n01", "rack2n02"]
    for bad in ("node;reboot", "a,b", "n[1]", "a b", "", "n" + "9" * 20):
        assert not valid_name(bad)
        with pytest.raises(ValueError):
            compress([bad])


# --- the scheduler outputs: grammar ----------------------------------------------------------------

_DRAIN = re.compile(r'scontrol update nodename=(\S+) state=drain reason="triage: ([^"$`\\!]*)"')
_K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_CONDITION_KEYS = {"type", "status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime"}


def _check_slurm(decision: Decision) -> None:
    exclude = emit.slurm_exclude(decision)
    if not decision.hosts:
        assert exclude == ""
    else:
        match = re.fullmatch(r"--exclude=(\S+)\n", exclude)
        assert match, exclude
        assert sorted(expand(match[1])) == sorted(h for h in decision.hosts if valid_name(h))
    lines = emit.slurm_drain(decision).splitlines()
    assert lines[0].startswith("# triage: ")
    drained = []
    for line in lines[1:]:
        if line.startswith("#"):
            continue
        match = _DRAIN.fullmatch(line)
        assert match, line
        assert shlex.split(line)[:4] == ["scontrol", "update", f"nodename={match[1]}", "state=drain"]
        assert len(match[2]) <= emit.MAX_REASON
        drained.append(match[1])
    assert drained == [h for h in decision.hosts if valid_name(h)]


def _check_k8s(decision: Decision) -> list[tuple[str, str, dict[str, object]]]:
    """The (node, taint, patch) of each node the script acts on, after checking each line's grammar."""
    lines = emit.kubectl(decision).splitlines()
    assert lines[0].startswith("# triage: ")
    commands = [shlex.split(line) for line in lines[1:] if not line.startswith("#")]
    acted = []
    for cordon, taint, patch in zip(commands[0::3], commands[1::3], commands[2::3], strict=True):
        node = cordon[2]
        assert cordon == ["kubectl", "cordon", node] and _K8S_NAME.fullmatch(node) and len(node) <= 253
        assert taint[:4] == ["kubectl", "taint", "nodes", node] and taint[5:] == ["--overwrite"]
        key, _, rest = taint[4].partition("=")
        value, _, effect = rest.partition(":")
        assert _QUALIFIED.fullmatch(key) and _LABEL_VALUE.fullmatch(value) and len(value) <= 63
        assert effect in ("NoSchedule", "PreferNoSchedule", "NoExecute")
        assert patch[:7] == ["kubectl", "patch", "node", node, "--subresource=status", "--type=strategic", "-p"]
        body = json.loads(patch[7])
        [condition] = body["status"]["conditions"]
        assert set(condition) <= _CONDITION_KEYS and condition["status"] in ("True", "False", "Unknown")
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", condition["type"]) and re.fullmatch(r"[A-Z][A-Za-z0-9]*",
                                                                                       condition["reason"])
        assert isinstance(condition["message"], str) and condition["message"]
        acted.append((node, taint[4], body))
    assert [a[0] for a in acted] == [h for h in decision.hosts if emit.k8s_node_name(h)]
    return acted


@pytest.mark.parametrize("fixture", BUNDLES)
def test_scheduler_outputs_of_real_bundles_follow_their_grammar(reports: dict[str, Report], fixture: str) -> None:
    decision = reports[fixture].decision
    assert decision is not None
    action, hosts = BUNDLES[fixture]
    assert (decision.action, decision.hosts) == (action, hosts)
    _check_slurm(decision)
    acted = _check_k8s(decision)
    assert [node for node, *_ in acted] == hosts
    assert emit.ranks(decision) == "".join(f"{r}\n" for r in decision.ranks)


def _hostile() -> Decision:
    """Names and reasons a log could carry: quotes, $(…), newlines, a name neither Slurm nor Kubernetes takes."""
    return Decision(action="requeue-excluding", rule="9;$(reboot)", reason='it said "$(reboot)"\nand `id`',
                    exclude=[Exclusion(kind="host", host="node07", rank=3, why='lost "peer" $(rm -rf /) `x`\\'),
                             Exclusion(kind="host", host="Node_8;reboot", why="x"),
                             Exclusion(kind="link", host="gpu-a9", peer="gpu-a10", why="it's\r\ndown")],
                    ranks=[3])


def test_text_from_logs_cannot_escape_the_outputs() -> None:
    decision = _hostile()
    _check_slurm(decision)
    acted = _check_k8s(decision)
    assert [node for node, *_ in acted] == ["node07", "gpu-a9", "gpu-a10"]
    for script in (emit.slurm_drain(decision), emit.kubectl(decision)):
        assert "$(" not in script and "`" not in script
        assert "# not a " in script and "node name, left out: Node_8;reboot\n" in script  # said, not run
        # Every line is a comment or one command: nothing a log wrote starts a line of its own.
        assert all(line.startswith(("#", "scontrol ", "kubectl ")) for line in script.splitlines())
    assert emit.slurm_exclude(decision) == "--exclude=gpu-a[9-10],node07\n"


def _kubectl_env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "kubeconfig"
    # A cluster that is not there (the discard port): nothing is ever sent anywhere.
    config.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
                      "users: [{name: u, user: {token: none}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                      "current-context: x\n", encoding="utf-8")
    return dict(os.environ, KUBECONFIG=str(config))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_takes_the_patch_and_the_taint(reports: dict[str, Report], tmp_path: Path) -> None:
    decision = reports["nccl24-ib-host3"].decision
    assert decision is not None
    [(node, taint, patch)] = _check_k8s(decision)
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    manifest = tmp_path / "node.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}, "spec": {},
                                    "status": {"conditions": [ready]}}), encoding="utf-8")
    env = _kubectl_env(tmp_path)
    done = subprocess.run(["kubectl", "patch", "--local", "-f", str(manifest), "--type=strategic", "-p",
                           json.dumps(patch), "-o", "json"], capture_output=True, text=True, timeout=60, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr
    conditions = {c["type"]: c for c in json.loads(done.stdout)["status"]["conditions"]}
    assert conditions["Ready"] == ready  # merged by type, the kubelet's own condition kept
    assert conditions[emit.CONDITION_TYPE] == patch["status"]["conditions"][0]  # type: ignore[index]
    # kubectl parses a taint before it calls the server (there is none here): a bad one is refused first.
    for spec, good in ((taint, True), (taint.replace("NoSchedule", "NoSchedul"), False)):
        done = subprocess.run(["kubectl", "taint", "nodes", node, spec, "--dry-run=client", "--request-timeout=5s"],
                              capture_output=True, text=True, timeout=60, env=env, check=False)
        assert done.returncode != 0  # no cluster either way
        assert ("invalid taint" in done.stderr) is not good, done.stderr
        assert ("127.0.0.1:9" in done.stderr) is good, done.stderr  # a good one got as far as calling it


# --- every format shows the decision -----------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fixture", BUNDLES)
def test_every_format_shows_the_decision(reports: dict[str, Report], fixture: str, fmt: str) -> None:
    action, hosts = BUNDLES[fixture]
    text = _text(reports[fixture], fmt)
    decision = reports[fixture].decision
    assert decision is not None
    if fmt in ("json", "sarif"):
        doc = json.loads(text)
        shown = doc["decision"] if fmt == "json" else doc["runs"][0]["properties"]["decision"]
        assert (shown["action"], shown["hosts"], shown["requeue"]) == (action, hosts, decision.requeue)
        assert shown["reason"] == decision.reason
        if fmt == "json":
            jsonschema.Draft202012Validator(SCHEMA).validate(doc)
        return
    label = {"terminal": "Decision: ", "markdown": "**Decision:** `", "github": "triage decision%3A ",
             "junit": 'name="triage.decision.summary" value="', "html": '<dt>Decision</dt><dd id="decision" data-action="'}[fmt]
    assert label + action in text
    shown = text.split(label + action, 1)[1].split("\n", 1)[0]
    for host in hosts:
        assert host in shown


def test_junit_with_the_decision_is_still_valid(reports: dict[str, Report]) -> None:
    schema = xmlschema.XMLSchema(str(ROOT / "tests" / "schemas" / "junit-10.xsd"))
    for report in reports.values():
        text = _text(report, "junit")
        assert 'name="triage.decision"' in text  # the decision is there, and the file still valid
        schema.validate(text)  # raises on an invalid document


# --- the CLI ---------------------------------------------------------------------------------------

def _cli(*args: str) -> tuple[int, str, str]:
    _register_repro()
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fixture", BUNDLES)
def test_analyze_writes_the_decision_for_a_scheduler(fixture: str, tmp_path: Path) -> None:
    action, hosts = BUNDLES[fixture]
    outs = {fmt: tmp_path / fmt for fmt in SCHEDULER_FORMATS}
    code, stdout, _ = _cli("analyze", str(FIXTURES / fixture), "-q", "-f", "json", "--exit-code-from", "decision",
                           *(a for fmt, path in outs.items() for a in ("-o", f"{fmt}={path}")))
    assert code == EXIT[action]
    decision = json.loads(stdout)["decision"]
    assert (decision["action"], decision["hosts"], decision["exit_code"]) == (action, hosts, EXIT[action])
    exclude = outs["slurm-exclude"].read_text(encoding="utf-8")
    assert exclude == (f"--exclude={compress(hosts)}\n" if hosts else "")
    assert outs["ranks"].read_text(encoding="utf-8") == "".join(f"{r}\n" for r in decision["ranks"])
    assert outs["slurm-drain"].read_text(encoding="utf-8").count("state=drain") == len(hosts)
    assert outs["k8s"].read_text(encoding="utf-8").count("kubectl cordon ") == len(hosts)


def test_the_verdicts_exit_codes_stay_the_default() -> None:
    assert _cli("analyze", str(FIXTURES / "nccl24-ib-host3"), "-q", "-f", "ranks")[0] == 1
    assert _cli("analyze", str(FIXTURES / "nccl24-only-host0-inconclusive"), "-q", "-f", "ranks")[0] == 3
    assert _cli("analyze", str(FIXTURES / "real-gloo-clean"), "-q", "-f", "ranks")[0] == 0


def test_a_user_policy_from_the_command_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\nexit_codes: {stop: 17}\nrules:\n  - {id: all, when: {}, action: stop, "
                      "reason: 'stop {culprits}'}\n", encoding="utf-8")
    code, stdout, _ = _cli("analyze", str(FIXTURES / "nccl24-ib-host3"), "-q", "-f", "json", "--policy", str(policy),
                           "--exit-code-from", "decision")
    assert code == 17
    assert json.loads(stdout)["decision"]["reason"] == "stop host gpu-node-03"


def _triage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, timeout=120,
                          check=False)


def test_a_bad_policy_or_option_is_a_usage_error_and_the_files_say_so(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\nrules: [{id: a, when: {colour: red}, action: none, reason: r}]\n", encoding="utf-8")
    out = tmp_path / "drain.sh"
    done = _triage("analyze", str(FIXTURES / "real-gloo-clean"), "--policy", str(policy), "-o", f"slurm-drain={out}",
                   "-o", f"json={tmp_path / 'r.json'}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{policy}: not a valid policy: row 1 (a): unknown condition 'colour'" in done.stderr
    assert out.read_text(encoding="utf-8").startswith("# triage ") and "unknown condition" in out.read_text()
    assert json.loads((tmp_path / "r.json").read_text())["decision"] is None
    for args in (("--exit-code-from", "decision", "--fail-on", "diagnosed"), ("--exit-code-from", "decision",
                                                                              "--exit-zero"),
                 ("--exit-code-from", "launcher")):
        done = _triage("analyze", str(FIXTURES / "real-gloo-clean"), *args)
        assert done.returncode == 2 and "--exit-code-from" in done.stderr


# --- repro gives the decision analyze gives ----------------------------------------------------------

@pytest.mark.slow
def test_repro_carries_the_decision_analyze_gives(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    log_dir = tmp_path / "logs"
    done = subprocess.run([sys.executable, "-m", "triage", "repro", "--backend", "gloo", "--world-size", "2",
                           "--timeout", "8", "--sizes", "1K", "--iters", "2", "--inject", "crash", "--inject-rank", "1",
                           "--log-dir", str(log_dir), "-f", "json", "-o", f"slurm-drain={tmp_path / 'drain.sh'}"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    printed = json.loads(done.stdout)["decision"]
    saved = json.loads((log_dir / "triage-report.json").read_text())["decision"]
    again = analyze([log_dir], jobs=1).decision
    assert again is not None
    assert printed == saved
    assert (printed["action"], printed["policy_row"]) == (again.action, again.rule) == ("stop", "crashed-in-code")
    assert printed["reason"] == again.reason and "SIGSEGV" in again.reason
    assert (tmp_path / "drain.sh").read_text().startswith("# triage: stop: ")


# --- the README's recipes ------------------------------------------------------------------------------

def _block(text: str, after: str, lang: str) -> str:
    return text.split(after, 1)[1].split(f"```{lang}\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("doc", ["README.md", "docs/decision.md"])
def test_the_recipes_are_well_formed(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    epilog = _block(text, "EpilogSlurmctld=", "sh")
    done = subprocess.run(["sh", "-n"], input=epilog, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert "--exit-code-from decision" in epilog and "slurm-drain=" in epilog
    for code in (EXIT["requeue"], EXIT["requeue-excluding"]):
        assert f"  {code})" in epilog
    steps = yaml.safe_load(_block(text, "requeues only when", "yaml"))
    requeue = steps[1]
    assert requeue["if"] == "failure() && steps.triage.outputs.requeue == 'true'"
    assert steps[0]["id"] == "triage" and ".decision.requeue" in steps[0]["run"]


@pytest.mark.slow
def test_watch_carries_the_decision_analyze_gives(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    job = ROOT / "tests" / "generators" / "watch_job.py"
    folder, out = tmp_path / "w", tmp_path / "verdict.json"
    done = subprocess.run([sys.executable, "-m", "triage", "watch", "--dir", str(folder), "--stall", "60",
                           "-o", f"json={out}", "-o", f"ranks={tmp_path / 'ranks'}", "--",
                           sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(job),
                           "--fault", "kill", "--rank", "1", "--at", "2"],
                          capture_output=True, text=True, timeout=240, check=False,
                          env=dict(os.environ, OMP_NUM_THREADS="1", TRIAGE_TEST_JOB=str(tmp_path)))
    assert "post-mortem" in done.stderr, done.stderr
    shown = json.loads(out.read_text())["decision"]
    again = analyze([folder], jobs=1).decision
    assert again is not None
    assert (shown["action"], shown["policy_row"], shown["reason"]) == (again.action, again.rule, again.reason)
    assert shown["action"] == "requeue"  # killed from outside (SIGKILL), no error of its own
    assert (tmp_path / "ranks").read_text() == ""
