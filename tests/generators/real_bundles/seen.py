"""What the logs of each real run actually show, added to its description."""

from __future__ import annotations

# What the logs of these runs actually show (added to each description).  Which victim torchrun
# names "Root Cause" and which victims print a traceback before the agent's SIGTERM reaches them
# vary between regenerations; the lines quoted here do not.
SEEN: dict[str, str] = {
    "real-gloo-hang-rank2":
        "ranks 0, 1, 3 raise RuntimeError '[.../gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
        "waiting 5000ms for recv operation to complete' (or ':129] ... send ...'); rank 2 logs step 4 "
        "and then nothing, and is listed with -15 (SIGTERM); Root Cause is a victim (exit 1).",
    "real-gloo-sigkill-rank1":
        "rank 1 is Root Cause with 'exitcode : -9' / 'Signal 9 (SIGKILL) received by PID'; victims "
        "print 'Read error [127.0.0.1]:<port>: Connection reset by peer' (pair.cc:537) or "
        "'Connection closed by peer' (pair.cc:553) unless SIGTERMed first.",
    "real-gloo-exception-rank3":
        "rank 3: '[rank3]: ValueError: invalid label -1 in batch 4 (expected 0..9)', Root Cause "
        "with exit 1; victims: 'Connection closed by peer [127.0.0.1]:<port>'.",
    "real-gloo-segfault-rank2":
        "rank 2's stderr.log just stops after step 2 (no 'Fatal Python error': torchrun's "
        "faulthandler is only on in @record entrypoints); Root Cause rank 2 'exitcode : -11' / "
        "'Signal 11 (SIGSEGV)'; victims: 'Connection reset by peer'.",
    "real-gloo-skip-init-rank3":
        "ranks 0-2: '[c10d] waitForInput: ... returned 0, likely a timeout', then "
        "'torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/3' "
        "(no [rankN]: prefix: the process group does not exist yet); rank 3 only logs its start-up "
        "lines and is listed with -15.",
    "real-gloo-clean": "every rank logs steps 0-9 and 'training done after 10 steps'; agent exits 0.",
    "real-2node-sigkill-rank5":
        "node02's block: Root Cause rank 5 'exitcode : -9' (SIGKILL); node01's block names one of "
        "its own ranks (exit 1, a victim); victims print gloo 'Connection closed by peer' / "
        "'Connection reset by peer'.",
    "real-2node-hang-rank6":
        "ranks 0-5 and 7 (those not SIGTERMed first) raise gloo 'Timed out waiting 5000ms for "
        "recv|send operation to complete'; rank 6 logs step 3 and then nothing and is listed with "
        "-15; each node's Root Cause is one of its victims.",
    "real-init-exception-rank0":
        "rank 0: plain (no [rank0]: prefix) 'ValueError: dataset index /data/shards/index.json "
        "lists -1 shards (expected > 0)' before init; the agent sees it exit at once (Root Cause "
        "rank 0, exit 1) and SIGTERMs ranks 1-3 while they still wait in init_process_group, so they "
        "print no error at all.",
    "real-init-sigkill-rank2":
        "rank 2 dies before init: Root Cause rank 2 'exitcode : -9' / 'Signal 9 (SIGKILL)'; the "
        "others are SIGTERMed (-15) within a second while waiting in init_process_group (or, on "
        "a slow start, before their own start-up line); no gloo or store error anywhere.",
    "real-2node-init-segfault-rank6":
        "node02: Root Cause rank 6 'exitcode : -11' (SIGSEGV), ranks 4, 5, 7 SIGTERMed; node01's "
        "ranks 0-3 (another agent, not killed) wait the full 5 s and raise 'DistStoreError: wait "
        "timeout after 5000ms, keys: /default_pg/0//cpu//0/6'.",
    "real-init-exit-rank3":
        "rank 3 leaves no line after its start-up lines; the block lists rank 3 as Root Cause with "
        "'exitcode : 1' and 'error_file: <N/A>'; the others are SIGTERMed while waiting in "
        "init_process_group and print nothing.",
    "real-8proc-init-abort-rank1":
        "Root Cause rank 1 'exitcode : -6' / 'Signal 6 (SIGABRT)', no message from rank 1; ranks "
        "0, 2-7 are SIGTERMed during start-up (on a slow start some before any line of their "
        "own) and print no error.",
    "real-init-memoryerror-rank2":
        "rank 2: a bare 'MemoryError' (no message, no [rank2]: prefix) from bytearray(1 << 50) "
        "before init; Root Cause rank 2 exit 1; the others are SIGTERMed silently.",
    "real-2node-init-assert-rank0":
        "rank 0: 'AssertionError: rank 0: no dataset shards assigned' before init (node01 Root "
        "Cause, exit 1); node01's agent hosts the rendezvous store, so node02's ranks 4-7 fail in "
        "init_process_group with '[c10d] recvValueWithTimeout failed ... Did the remote server "
        "shutdown or crash?' / 'DistNetworkError: Failed to recv, got 0 bytes' and node02's agent "
        "prints RendezvousConnectionError (here without any ChildFailedError block of its own); "
        "these are consequences.",
    "real-init-wrong-port-rank3":
        "rank 3: 'using MASTER_PORT=<port+1> from job config', then '[E... socket.cpp:1028] [c10d] "
        "The client socket has timed out after 5000ms while trying to connect to (127.0.0.1, "
        "<port+1>).' and 'TCP client failed to connect/validate to host 127.0.0.1:<port+1> - "
        "retrying (try=0, ...)'; ranks 0-2: 'DistStoreError: wait timeout after 5000ms, keys: "
        "/default_pg/0//cpu//0/3'; Root Cause is a victim, rank 3 is listed with -15.",
    "real-2node-init-wrong-port-rank5":
        "rank 5 (node02): 'The client socket has timed out after 5000ms while trying to connect to "
        "(localhost, <port+1>)' + retrying; every other rank on both nodes: 'DistStoreError: wait "
        "timeout after 5000ms, keys: /default_pg/0//cpu//0/5'; rank 5 is listed with -15.",
    "real-first-hang-rank1":
        "init completes on all ranks ('process group ready'); ranks 0, 2, 3 raise gloo 'Timed out "
        "waiting 5000ms for send|recv operation to complete' from dist.broadcast before any step; "
        "rank 1 logs nothing after its data-loader lines and is listed with -15.",
    "real-first-sigkill-rank3":
        "Root Cause rank 3 'exitcode : -9'; the others die in or before the first broadcast, "
        "mostly SIGTERMed before they report ('Connection closed by peer' where one does); no "
        "step line anywhere.",
    "real-2node-first-exception-rank2":
        "rank 2: '[rank2]: ValueError: checkpoint /ckpt/init.pt: unexpected key ...' (node01 Root "
        "Cause, exit 1); DETAIL: rank 0 '[Rank 0]: Ranks 2 failed to pass monitoredBarrier in 5000 "
        "ms', ranks 1, 3-7 'Rank r successfully reached monitoredBarrier, but received errors while "
        "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.' + 'Connection "
        "closed by peer' (those not SIGTERMed first); node02's agent may print "
        "RendezvousConnectionError (a consequence: node01's agent hosts the store).",
    "real-first-segfault-rank0":
        "Root Cause rank 0 'exitcode : -11' after its 'process group ready' line, no message; "
        "victims: 'Read error ... Connection reset by peer' / 'Connection closed by peer' from "
        "dist.broadcast.  (In an earlier regeneration a slower rank was still connecting inside "
        "init_process_group and raised 'Gloo connectFullMesh failed with [.../pair.cc:553] "
        "Connection closed by peer' -- an init-looking error although rank 0 failed after init.)",
    "real-first-exit-rank2":
        "rank 2 silently exits 1 after 'process group ready' (Root Cause, exit 1, no traceback); "
        "victims: 'Connection closed by peer' from dist.broadcast.",
    "real-first-abort-rank3":
        "Root Cause rank 3 'exitcode : -6' / 'Signal 6 (SIGABRT)', no message from rank 3; DETAIL: "
        "rank 0 still reports '[Rank 0]: Ranks 3 failed to pass monitoredBarrier in 5000 ms' before "
        "the agent's SIGTERM.",
    "real-first-oom-rank1":
        "rank 1: '[rank1]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. "
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 140737488355328 bytes. "
        "Error code 12 (Cannot allocate memory)' (Root Cause, exit 1); victims: 'Connection closed "
        "by peer'.",
    "real-8proc-first-assert-rank6":
        "rank 6: '[rank6]: AssertionError: batch sync: expected shape (32, 16), got (31, 16)' (Root "
        "Cause, exit 1); a victim or two: 'Connection closed by peer'.",
    "real-first-late-rank2":
        "ranks 0, 1, 3: 'ERROR train: initial weight sync failed (RuntimeError: ... Timed out "
        "waiting 5000ms for send|recv operation to complete)' then the same RuntimeError traceback "
        "10 s later; rank 2 arrives 3 s after their timeouts and its broadcast fails at once: "
        "'ERROR train: initial weight sync failed (RuntimeError: [.../pair.cc:553] Connection "
        "closed by peer ...' -- the late rank's only error looks like a crash victim's; it is "
        "SIGTERMed (-15) during its own 10 s grace, so it has no traceback.  Category left open "
        "(slow, not hung).",
    "real-2node-first-late-rank5":
        "DETAIL: rank 0 '[Rank 0]: Ranks 5 failed to pass monitoredBarrier in 5000 ms'; ranks 1-4, "
        "6, 7 'successfully reached monitoredBarrier, but received errors ... from rank 0' + 'Timed "
        "out waiting 5000ms for recv'; rank 5 is SIGTERMed while still sleeping (no line).  Category "
        "left open (slow, not hung).",
    "real-first-shape-rank3":
        "gloo notices it on the receiver with the short buffer, rank 3 itself: 'terminate called "
        "after throwing an instance of 'gloo::EnforceNotMet'' / 'what():  [enforce fail at "
        ".../gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 64 vs 60. Received "
        "data size doesn't match expected size. Is there a distributed collective mismatch in your "
        "code?' and Root Cause rank 3 'exitcode : -6' (SIGABRT); ranks 0 and 2 log 'initial "
        "weights synchronised from rank 0' (the size they got matched theirs, so the sender was "
        "not the odd one) and another rank fails in dist.broadcast with 'Connection reset by "
        "peer'.  (A first try with one element "
        "MORE on rank 3 completed silently -- 64 bytes fit in 68 -- and the job exited 0, so gloo "
        "cannot see that case at all.)",
    "real-first-op-rank1":
        "DETAIL: ranks 0, 2, 3: 'RuntimeError: Detected mismatch between collectives on ranks. Rank "
        "r is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=BROADCAST, "
        "TensorShape=[1, 16], ...), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, ...).Collectives differ in the "
        "following aspects:   Op type: BROADCASTvs ALLREDUCE'; rank 1's own message names rank 0.",
    "real-detail-hang-rank2":
        "DETAIL wraps every collective in a monitoredBarrier: rank 0 '[E... ProcessGroupGloo.cpp:2901] "
        "[Rank 0]: Rank 2 failed to pass monitoredBarrier in 5000 ms' and 'RuntimeError: [Rank 0]: "
        "Ranks 2 failed to pass monitoredBarrier in 5000 ms'; ranks 1, 3: 'Rank r successfully "
        "reached monitoredBarrier, but received errors while waiting for send/recv from rank 0. "
        "Please check rank 0 logs for faulty rank.' + 'Timed out waiting 5000ms for recv'; rank 2 "
        "silent, -15.",
    "real-8proc-sigkill-rank7":
        "Root Cause rank 7 'exitcode : -9'; a few victims print 'Read error [127.0.0.1]:<port>: "
        "Connection reset by peer', the rest are SIGTERMed first.",
    "real-2node-exception-rank2":
        "rank 2: '[rank2]: ValueError: invalid label -1 in batch 3' (node01 Root Cause); DETAIL: "
        "rank 0 '[Rank 0]: Ranks 2 failed to pass monitoredBarrier in 5000 ms' (a crashed rank is "
        "reported like a missing one), node02's ranks: 'successfully reached monitoredBarrier, but "
        "received errors ... from rank 0' + 'Connection closed by peer'.  node01's agent hosts "
        "the rendezvous store and may exit first; node02's agent then dies with "
        "'RendezvousConnectionError: The connection to the C10d store has failed.' and prints no "
        "ChildFailedError block at all.",
    "real-2node-segfault-rank7":
        "node02: Root Cause rank 7 'exitcode : -11', no line from rank 7 after step 3; node01's "
        "ranks: 'Connection closed by peer', node01's Root Cause is a victim (exit 1).",
    "real-exit-rank1":
        "Root Cause rank 1 'exitcode : 1', 'error_file: <N/A>', no traceback and no message; "
        "victims: 'Read error ... Connection reset by peer'.",
    "real-abort-rank3":
        "Root Cause rank 3 'exitcode : -6' / 'Signal 6 (SIGABRT)', no message; victims: "
        "'Connection reset by peer' / 'Connection closed by peer'.",
    "real-oom-rank2":
        "rank 2: '[rank2]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. "
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 140737488355328 bytes. "
        "Error code 12 (Cannot allocate memory)' (Root Cause, exit 1); victims: 'Connection closed "
        "by peer'.",
    "real-2node-memoryerror-rank4":
        "rank 4: '[rank4]: MemoryError' (bare, node02 Root Cause); DETAIL: rank 0 '[Rank 0]: Ranks 4 "
        "failed to pass monitoredBarrier in 5000 ms', ranks 1-3 'successfully reached "
        "monitoredBarrier, but received errors ... from rank 0' + 'Connection closed by peer'.",
    "real-assert-rank0":
        "rank 0: '[rank0]: AssertionError: batch 6: expected shape (32, 16), got (31, 16)' (Root "
        "Cause, exit 1); victims: 'Connection closed by peer'.",
    "real-8proc-hang-rank5":
        "seven ranks raise 'Timed out waiting 5000ms for recv|send operation to complete' (exit 1 "
        "or SIGTERMed first); rank 5 logs step 2 and then nothing, -15.",
    "real-straggler-rank1":
        "ranks 0, 2, 3 time out at the same second: 'ERROR train: step 4 failed (RuntimeError: "
        "... Timed out waiting 5000ms for recv|send operation to complete); writing emergency "
        "checkpoint', then the RuntimeError traceback 10 s later (exit 1); rank 1 wakes 3 s after "
        "their timeouts and its all_reduce fails at once with 'ERROR train: step 4 failed "
        "(RuntimeError: [.../pair.cc:553] Connection closed by peer [127.0.0.1]:<port>. This is "
        "typically caused by a remote worker crashing...' -- gloo closed the pairs on timeout, so "
        "the slow rank does not time out itself, it sees a crash-like error 3 s later than everyone "
        "else's timeout; it is SIGTERMed (-15) in its grace period, so no traceback.  Category left "
        "open (slow, not hung).",
    "real-subgroup-hang-rank3":
        "rank 2 (rank 3's pair peer) raises 'Timed out waiting 5000ms for recv' from "
        "'dist.all_reduce(pair_loss, group=pair)' after step 4; ranks 0 and 1 finished their own "
        "pair all_reduce, log step 5 and time out ~0.2 s later in step 6's global all_reduce; rank 3 "
        "logs step 4 and then nothing, -15.  Same gloo text in both groups: only the traceback line "
        "and the last step tell the groups apart.",
    "real-2node-subgroup-hang-rank4":
        "DETAIL: global rank 0 reports '[Rank 0]: Ranks 4, 5 failed to pass monitoredBarrier in "
        "5000 ms' (both members of the pair, at step 5's global all_reduce); rank 5, stuck in the "
        "pair group's barrier, prints 'Rank 1 successfully reached monitoredBarrier, but received "
        "errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.' "
        "-- ranks of the sub-group, i.e. global 5 and 4; ranks 1-3, 6, 7 point at global rank 0 the "
        "same way; ranks 4 and 5 last log step 3, the others step 4; rank 4 is silent, -15.",
    "real-mismatch-shape-rank1":
        "without DETAIL gloo notices only on a receiver: rank 0 (not the odd rank) prints "
        "'terminate called after throwing an instance of 'gloo::EnforceNotMet'' / '[enforce fail at "
        ".../pair.cc:456] op.preamble.length <= op.nbytes. 12 vs 8. Received data size doesn't match "
        "expected size. Is there a distributed collective mismatch in your code?' and is Root "
        "Cause with 'exitcode : -6'; rank 1 gets 'Read error ... Connection reset by peer', rank 3 "
        "'Connection closed by peer'.  Nothing names the sender of the odd size: the only trace of "
        "rank 1 is the source line in its traceback (dist.all_reduce(torch.cat([...]))) against one "
        "other traceback, so the honest verdict is inconclusive (phase execution; the message "
        "itself says collective mismatch).",
    "real-mismatch-op-rank3":
        "no mismatch message: the ranks raise 'Timed out waiting 5000ms for recv|send operation to "
        "complete' (in one regeneration rank 0 got 'Connection closed by peer' instead); the odd "
        "rank shows only in the tracebacks: "
        "rank 3's goes through 'distributed_c10d.py\", line ..., in broadcast' where ranks 0-2 go "
        "through 'in all_reduce' at the same step.",
    "real-detail-mismatch-shape-rank1":
        "DETAIL: ranks 0, 2, 3: 'Detected mismatch between collectives on ranks. Rank r is running "
        "collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1, 16], "
        "...), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=0OpType=GATHER).' "
        "-- the fingerprint of the odd rank is itself garbled (its longer shape breaks the "
        "fingerprint exchange), rank 1 says 'Rank 1 is running ... TensorShape=[17] ..., but Rank 0 "
        "is running collective: CollectiveFingerPrint(SequenceNumber=0OpType=SCATTER)'; three ranks "
        "name rank 1.",
    "real-detail-mismatch-op-rank3":
        "DETAIL: ranks 0, 1, 2: '... Rank r is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1, 16], ...), but "
        "Rank 3 is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, "
        "...).Collectives differ in the following aspects:   Op type: ALLREDUCEvs BROADCAST'; rank "
        "3's names rank 0.",
    "real-2node-detail-mismatch-op-rank6":
        "DETAIL: all seven other ranks say '... but Rank 6 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=10, OpType=BROADCAST ...' on both nodes; rank 6's "
        "names rank 0.",
    "real-detail-clean":
        "every rank logs steps 0-9 and 'training done after 10 steps'; DETAIL adds no error line.",
}
