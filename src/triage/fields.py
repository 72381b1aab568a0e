"""The event fields that triage itself reads: the vocabulary shared by rules and diagnosis.

A rule turns the named groups of its regex into an event's `fields`. The job model (ranks, hosts,
world size), the diagnosis (culprits, peers, sequence numbers) and the scanner (phase, clock) read
some of them by name; those names are registered here with their type and meaning. Every named
group of a rule must be one of these or be listed in the rule's `info_fields` (groups captured only
for the message): a misspelt field name is then refused when the rule is loaded, instead of silently
doing nothing.

To add a field: add an entry below, read it where it matters, and regenerate the table in
docs/rules.md with `python -m triage.fields` (tests/test_rule_contract.py checks it is current).
"""

from __future__ import annotations

from typing import NamedTuple

# What a field's text holds. Captured values are always strings; these say how readers parse them.
TYPES: dict[str, str] = {
    "int": "a non-negative decimal number",
    "signed-int": "a decimal number, possibly negative",
    "str": "free text",
    "rank-list": "ranks, any separators and ranges: `3`, `1, 2`, `[1,3,5,]`, `0-3`",
    "ip": "an IPv4 or IPv6 address",
    "host": "a host name (short or fully qualified) or an address",
    "signal": "a signal name (`SIGKILL`), number (`9`) or description (`Killed`, as srun prints it); see signal_name",
    "phase": "one of comm_init, operator_load, execution, teardown",
    "timestamp": "a wall-clock time as the log writes it",
}


class Field(NamedTuple):
    type: str  # a key of TYPES
    meaning: str  # one line


FIELDS: dict[str, Field] = {
    # Who the line is about: its writer, or the worker/rank a launcher or RAS line describes.
    "rank": Field("int", "rank named in the message; global, or local to the group `pg` names when that is not the default group"),
    "pg_rank": Field("int", "rank within the process group the line names (group-local)"),
    "local_rank": Field("int", "rank on its node, as launchers number workers"),
    "host": Field("host", "host of the process the line is about (the writer, or the worker a launcher line describes)"),
    "pid": Field("int", "process id of the process the line is about (ties launcher lines to the rank that logged that pid)"),
    "ip": Field("ip", "address of the process the line is about (a writer announcing its own address, a rank RAS lists)"),
    "device": Field("int", "GPU/NPU index of the process the line is about"),
    # Groups and communicators.
    "pg": Field("str", "process group: `0`, `default_pg`, a name or GUID; absent or default means the world group"),
    "pg_guid": Field("str", "process-group GUID, the same on every rank (`PG GUID 3`)"),
    "pg_key": Field("str", "process group as the job model keys it (`pg:0`, `pg:<guid>`, `comm:<id>`); set by triage itself"),
    "pg_desc": Field("str", "process-group description (`default_pg`, `undefined`, a user-given name)"),
    "comm_id": Field("str", "communicator id: NCCL commId hash, HCCL group identifier"),
    "snapshot": Field("str", "NCCL RAS: the dump (source) a fact was read from; one per time RAS was asked; set by triage itself"),
    "ras_group": Field("int", "NCCL RAS: the group of same-shaped communicators (`#group-index`) a fact is about; set by triage itself"),
    "errors": Field("str", "NCCL RAS: a group of communicators' error summary (OK, INCOMPLETE, …); set by triage itself"),
    "comm_status": Field("str", "NCCL RAS: a communicator rank's status (NOCOMM/UNKNOWN, INIT, RUNNING, FINALIZE, ABORT); set by triage itself"),
    "peer_device": Field("str", "device at the other end of an HCCL link or error CQE (an id; one documented CQE form prints an address there)"),
    "table_rank": Field("int", "HCCL rank table: the rank_id of a device entry (the table is nobody's log: not `rank`)"),
    "src_server": Field("ip", "HCCL connect probe: the server of the end that could not connect (srcRank)"),
    "src_device": Field("int", "HCCL connect probe: the device of the end that could not connect (srcRank)"),
    "exception": Field("str", "HCCL heartbeat: what it found on the device it names (Heartbeat Lost, Stuck, Error cqe; LOST, STUCK, ERROR CQE)"),
    "tag": Field("str", "HCCL operation tag: the op and its communicator's identifier (`AllReduce_group_name_1`)"),
    "nranks": Field("int", "ranks in the communicator; the world communicator has world-size ranks"),
    "world_size": Field("int", "ranks in the job"),
    "node_count": Field("int", "nodes in the job (RAS's job summary)"),
    "connected": Field("str", "HCCL negotiation root: the ranks that connected (`[0000000000000000],[0000000000000002]`)"),
    "clients_expected": Field("int", "store clients the store server waited for (the world size)"),
    "clients_joined": Field("int", "store clients that had joined when the store server gave up waiting for the rest"),
    # Progress.
    "seq": Field("int", "sequence number of the collective the line is about (SeqNum, NCCL work, HCCL index)"),
    "op": Field("str", "collective operation (ALLREDUCE, BROADCAST, _ALLGATHER_BASE …)"),
    "timeout_ms": Field("int", "how long the rank waited before giving up, in ms (its timeout): when its wait began"),
    "elapsed_ms": Field("int", "how long the timed-out collective ran, in ms: when the rank began waiting"),
    "timeout_s": Field("int", "how long the rank waited before giving up, in s"),
    "call": Field("str", "torch.distributed function a traceback frame is in (`all_reduce`, `broadcast`, `init_process_group` …)"),
    "fp_rank": Field("int", "rank whose collective fingerprint the line gives first (TORCH_DISTRIBUTED_DEBUG=DETAIL)"),
    "fp_seq": Field("int", "0-based collective number in a fingerprint (SequenceNumber=…)"),
    "shape": Field("str", "tensor shape(s) of the collective, as the fingerprint prints them"),
    "dtype": Field("str", "tensor dtype(s) of the collective, as the fingerprint prints them"),
    "peer_op": Field("str", "collective operation the other rank of a fingerprint mismatch runs"),
    "peer_shape": Field("str", "tensor shape(s) the other rank of a fingerprint mismatch uses"),
    "peer_dtype": Field("str", "tensor dtype(s) the other rank of a fingerprint mismatch uses"),
    "peer_fp_seq": Field("int", "0-based collective number the other rank of a fingerprint mismatch is at"),
    "parameter": Field("str", "collective argument two linked ranks disagree on (HCCL EI0005: tag, cmdType, op, count, dataType, cclbufferSize)"),
    "local_value": Field("str", "the writer's own value of that disagreeing argument (HCCL EI0005 `local[…]`)"),
    "remote_value": Field("str", "the other end's value of that disagreeing argument (HCCL EI0005 `remote[…]`)"),
    "tls_switch": Field("str", "TLS switch of the writer's device as HCCP reports it (`TLS SWITCH (1)`: 1 on, 0 off)"),
    "tls_enabled": Field("str", "devices HCCL lists with TLS enabled (EI0016), `[hostIp/deviceId]` entries"),
    "tls_disabled": Field("str", "devices HCCL lists with TLS disabled (EI0016), `[hostIp/deviceId]` entries"),
    "detector_rank": Field("int", "the rank whose watchdog first detected a collective timeout (PyTorch's dump signal)"),
    "enqueued": Field("signed-int", "last enqueued collective sequence number (-1: none yet or unknown)"),
    "started": Field("signed-int", "last started collective sequence number (-1: none yet or unknown)"),
    "completed": Field("signed-int", "last completed collective sequence number (-1: none yet or unknown)"),
    "step": Field("str", "what the process was doing when it wrote the line (a training step, `before all_reduce #7`)"),
    "milestone": Field("str", "named point of the run the process reports having reached"),
    "phase": Field("phase", "phase the line names; a rule of phase `any` takes its event phase from it"),
    "time": Field("timestamp", "wall-clock time written inside the message (ChildFailedError `time :`); wins over the line's clock"),
    # The other end of a failed link or wait.
    "peer_rank": Field("int", "rank at the other end of the failed link or wait, as the line numbers it (HCCL: in the operation's communicator); triage.job.peers resolves it to a global rank"),
    "peer_ip": Field("ip", "address at the other end of the failed connection"),
    "peer_port": Field("int", "port at the other end of the failed connection"),
    "peer_host": Field("host", "host name at the other end of the failed connection"),
    # Culprits a tool named (desync report, monitoredBarrier, RAS, HCCL heartbeat, repro).
    "culprit_ranks": Field("rank-list", "ranks a tool named as the cause"),
    "at_step": Field("int", "the training step at which triage.health.shrink dropped ranks"),
    "group_name": Field("str", "the process group a triage.health check ran on (its name, as torch.distributed gives it)"),
    "check_no": Field("int", "which triage.health check this was: its call number on the group and tag"),
    "check_tag": Field("str", "the tag of a triage.health check (calls are numbered per group and tag)"),
    "survivors": Field("int", "how many ranks went on after triage.health.shrink dropped the others"),
    "culprit_pid": Field("int", "process a tool named as the cause"),
    "culprit_ip": Field("ip", "address of the process or device a tool named as the cause"),
    "culprit_device": Field("int", "device (GPU/NPU index) a tool named as the cause"),
    "culprit_host": Field("host", "host a tool named as the cause"),
    # Lines no rule explains (Kind.UNEXPLAINED): set by the scanner, folded for the report.
    "marker": Field("str", "what marked an unexplained line as an error (`nccl-warn`, `c10-error`, `cann-error` …); set by the scanner"),
    "signature": Field("str", "an unexplained line's message with what varies folded into placeholders; set by the scanner"),
    # Live stacks (py-spy dumps that `triage watch` takes; triage.parse.pyspy).
    "stack_state": Field("str", "what a process's stack shows it doing (collective, device-wait, data-loading, checkpoint-io, exception, lock, sleep, python); set by triage itself"),
    "stack": Field("str", "the top frames of the thread that decided a process's stack state, one `line<TAB>frame` per line; set by triage itself"),
    "stack_call": Field("str", "the call that decided a process's stack state (`all_reduce`, `PyThread_acquire_lock_timed` …); set by triage itself"),
    "thread": Field("str", "the thread a stack fact is about (its name, or its id); set by triage itself"),
    # triage watch's own lines and snapshots (rules/stack/stack-watch-stalled, stack-kernel-*).
    "hang_kind": Field("str", "the kind of hang triage watch saw (idle, spinning, all-waiting, silent)"),
    "window_why": Field("str", "why triage watch's window for that kind was as long as it was (`default 30 s`, `--stall 120`, a pause it learnt)"),
    "wchan": Field("str", "the kernel function a process's main thread waits in (/proc/<pid>/wchan: `locks_lock_inode_wait`)"),
    "proc_state": Field("str", "a process's state letter in /proc (R, S, D …)"),
    "syscall": Field("str", "the system call a process's main thread is in, by name (`flock`, `futex`)"),
    "syscall_nr": Field("int", "the system call a process's main thread is in, by number (/proc/<pid>/syscall)"),
    # How a process ended.
    "signal": Field("signal", "signal that ended the process, or that the line says was sent"),
    "exitcode": Field("signed-int", "exit code; negative means ended by that signal number (torchrun style)"),
    # Flight-recorder dumps (triage.parse.fr, docs/formats.md §1.6.1): set by triage itself, one
    # `fr-dump` event per dump, one `fr-group` per process group, one `fr-entry` per entry kept.
    "dump_path": Field("str", "file a flight-recorder dump was (or could not be) written to, as the line names it"),
    "fr_version": Field("str", "flight-recorder dump: its format version (`2.10`; `pre-2024` for the bare list)"),
    "fr_form": Field("str", "flight-recorder dump: pickle, json (the _dump_fr_trace_json form) or list (pre-2024)"),
    "fr_lib_version": Field("str", "flight-recorder dump: nccl_version / comm_lib_version it states"),
    "fr_file_rank": Field("int", "flight-recorder dump: the rank its file name gives (the dump itself names none)"),
    "fr_entries": Field("int", "flight-recorder dump or group: entries in the ring buffer"),
    "fr_groups": Field("int", "flight-recorder dump: process groups it states"),
    "fr_first_record": Field("int", "flight-recorder dump: lowest record_id in the buffer (above 0: the ring buffer wrapped, its start dropped)"),
    "fr_last_record": Field("int", "flight-recorder dump: highest record_id in the buffer"),
    "fr_pg": Field("str", "flight-recorder: process group name (the GUID the logs print as `PG GUID n`)"),
    "fr_pg_desc": Field("str", "flight-recorder: process group description (`default_pg`, a user-given name)"),
    "fr_pg_id": Field("str", "flight-recorder: the pg_status key, the group's process-local id (the entries' pg_id)"),
    "fr_pg_ranks": Field("rank-list", "flight-recorder: the group's global ranks from pg_config, comma-separated (absent: not stated; gloo states none)"),
    "fr_pg_size": Field("int", "flight-recorder: the number of ranks pg_config lists for the group"),
    "fr_last_enqueued": Field("signed-int", "flight-recorder pg_status: last enqueued collective (gloo counts every op, as op_id)"),
    "fr_last_started": Field("signed-int", "flight-recorder pg_status: last started collective (-1 without TORCH_NCCL_ENABLE_TIMING)"),
    "fr_last_completed": Field("signed-int", "flight-recorder pg_status: last completed collective"),
    "fr_first_seq": Field("int", "flight-recorder group: lowest collective_seq_id in the buffer"),
    "fr_last_seq": Field("int", "flight-recorder group: highest collective_seq_id in the buffer"),
    "fr_first_p2p": Field("int", "flight-recorder group: lowest p2p_seq_id of its P2P entries"),
    "fr_last_p2p": Field("int", "flight-recorder group: highest p2p_seq_id of its P2P entries"),
    "fr_first_op_id": Field("int", "flight-recorder group: lowest op_id in the buffer"),
    "fr_last_op_id": Field("int", "flight-recorder group: highest op_id in the buffer"),
    "fr_ops": Field("str", "flight-recorder group: every collective in the buffer as runs `first-last:sig` (`1-40:0,41:1`) over fr_sigs"),
    "fr_sigs": Field("str", "flight-recorder group: JSON list of signatures (`all_reduce in=[[4]]:Float out=[[4]]:Float`) fr_ops points into"),
    "fr_p2p_ops": Field("str", "flight-recorder group: P2P entries as runs of p2p_seq_id over fr_p2p_sigs"),
    "fr_p2p_sigs": Field("str", "flight-recorder group: JSON list of P2P signatures fr_p2p_ops points into"),
    "fr_entry": Field("int", "flight-recorder entry: its position in the dump's entries (0-based; evidence line = position + 1)"),
    "fr_record": Field("int", "flight-recorder entry: record_id (per process, not per group)"),
    "fr_seq": Field("int", "flight-recorder entry: collective_seq_id (seq_id before 2024), per group"),
    "fr_p2p_seq": Field("int", "flight-recorder entry: p2p_seq_id, per group"),
    "fr_op_id": Field("int", "flight-recorder entry: op_id (counts every op, coalesced members and P2P included)"),
    "fr_op": Field("str", "flight-recorder entry: the op (`all_reduce`, `broadcast`, `send`, `coalesced`) without backend"),
    "fr_backend": Field("str", "flight-recorder entry: the backend prefix of profiling_name (`nccl`, `gloo`, `xccl` …)"),
    "fr_p2p_peers": Field("str", "flight-recorder entry: group ranks of a P2P op as profiling_name gives them (`1->2`, `3<-0`)"),
    "fr_is_p2p": Field("int", "flight-recorder entry: 1 for a P2P op, 0 otherwise"),
    "fr_in_sizes": Field("str", "flight-recorder entry: input sizes, JSON (`[[4,1024]]`)"),
    "fr_out_sizes": Field("str", "flight-recorder entry: output sizes, JSON"),
    "fr_in_dtypes": Field("str", "flight-recorder entry: input dtypes, JSON (`[\"Float\"]`)"),
    "fr_out_dtypes": Field("str", "flight-recorder entry: output dtypes, JSON"),
    "fr_state": Field("str", "flight-recorder entry: scheduled, started or completed as recorded (gloo never moves it)"),
    "fr_created_ns": Field("int", "flight-recorder entry: time_created_ns (epoch ns)"),
    "fr_started_ns": Field("int", "flight-recorder entry: time_discovered_started_ns (absent: not seen)"),
    "fr_completed_ns": Field("int", "flight-recorder entry: time_discovered_completed_ns (absent: not seen)"),
    "fr_duration_ms": Field("str", "flight-recorder entry: duration_ms (with TORCH_NCCL_ENABLE_TIMING)"),
    "fr_timeout_ms": Field("int", "flight-recorder entry or group: the op's timeout in ms (a group: its last entry's)"),
    "fr_frames": Field("str", "flight-recorder entry: innermost frames, JSON `[[name, file, line], …]` (absent: not recorded, as in the JSON form)"),
    "fr_frames_total": Field("int", "flight-recorder entry: frames the entry had before they were cut to the innermost few"),
    "fr_thread": Field("str", "flight-recorder entry: thread_name (thread_id), 2.10"),
    "fr_kept": Field("str", "flight-recorder entry: why it got an event: `in-flight` (not known complete) or `last-completed`"),
    # Configuration the logs echo, compared across ranks (triage.job.config).
    "nccl_version": Field("str", "NCCL version a process loaded (`2.28.9`), from its banner"),
    "cuda_version": Field("str", "CUDA version NCCL was built for (`12.8`), from its banner"),
    "env_name": Field("str", "a setting the log echoes: `NCCL_SOCKET_IFNAME` of `… set by environment to eth0`"),
    "env_value": Field("str", "the value it echoes for `env_name`"),
}


# Linux signal numbers, and the strsignal(3) texts that srun prints instead of names.
_SIGNAL_NUMBERS = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
    14: "SIGALRM", 15: "SIGTERM",
}
_SIGNAL_TEXTS = {
    "hangup": "SIGHUP", "interrupt": "SIGINT", "quit": "SIGQUIT", "illegal instruction": "SIGILL",
    "trace/breakpoint trap": "SIGTRAP", "aborted": "SIGABRT", "bus error": "SIGBUS",
    "floating point exception": "SIGFPE", "killed": "SIGKILL", "segmentation fault": "SIGSEGV",
    "broken pipe": "SIGPIPE", "alarm clock": "SIGALRM", "terminated": "SIGTERM",
    "out of memory": "OOM",  # srun's word for a task the cgroup OOM killer ended (with SIGKILL)
}


def signal_name(value: str) -> str | None:
    """A `signal` field as a name: `9`, `SIGKILL`, `kill`, `Killed` → `SIGKILL`; None if unknown.

    srun writes `Out Of Memory` for a task the cgroup OOM killer ended: that reads as `OOM`.
    """
    text = value.strip()
    if text.isdigit():
        return _SIGNAL_NUMBERS.get(int(text))
    if text.lower() in _SIGNAL_TEXTS:
        return _SIGNAL_TEXTS[text.lower()]
    name = text.upper() if text.upper().startswith("SIG") else "SIG" + text.upper()
    return name if name in _SIGNAL_NUMBERS.values() else None


def markdown_table() -> str:
    """The registry as the table docs/rules.md shows (sorted by name)."""
    rows = ["| field | type | meaning |", "|---|---|---|"]
    rows += [f"| `{name}` | {f.type} | {f.meaning} |" for name, f in sorted(FIELDS.items())]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
