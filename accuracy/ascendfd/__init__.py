"""What ascend-fd's root-cluster rules would answer on a bundle of raw Ascend logs.

    python -m accuracy.ascendfd [--json OUT] tests/fixtures/ascend-*/

A re-implementation, written for issue 8, of MindCluster Ascend FaultDiag's ("ascend-fd") root-cluster
diagnosis: the per-process plog cleaning (``ascend-fd parse``) followed by ``ErrorChecker.check``
(``ascend-fd diag``). It does not use triage's engine. It copies the source's keywords, split keys
and decision order, including its limitations. It does not improve on them. Everything below cites
the source at

    github.com/Ascend/mind-cluster @ 22bb3d987bc0208c3eb7395e222b661276133c58
    (all paths relative to component/ascend-faultdiag/src/ascend_fd/)

Files read: utils/regular_table.py (keywords, regexes), pkg/parse/parser_saver.py (ProcessLogSaver:
which files are taken), pkg/parse/root_cluster/rc_parse_job.py (per-worker parse, TLS, device-log
AI CPU notify wait, duplicate device ids), pkg/parse/root_cluster/parser.py (PidFileParser,
BaseInfoParser, ErrorParser), pkg/diag/root_cluster/rc_diag_job.py (RCDiagWorker: device table,
checker choice, lagging devices), pkg/diag/root_cluster/utils.py (Device, DeviceTable,
RemoteRelation, TimeoutErrorOfIdentifier, ErrorChecker), pkg/diag/root_cluster/fault_description.py
and utils/i18n.py (codes 101-133 and their English strings), utils/tool.py
(get_log_module_and_time), pkg/parse/blacklist/blacklist_op.py (DEFAULT_BLACKLIST),
utils/comm_valid.py, model/parse_info.py.

What the source does that docs/prior-art.md §A8 does not say (the source wins here):
- The order is: no error device (130 lagging / 102) -> CQE (116) -> Cluster Exception Location (126)
  -> Transport-init wait chain (132) -> the first error device's first timeout (utils.py
  ErrorChecker.check, lines 949-982) -> no timeout anywhere: AI CPU notify-wait chain (109) or all
  error devices (101) -> otherwise error devices minus timed-out devices (113). Code 133 is reached
  only inside the timeout step, when the first timeout is a "normal" one (utils.py:1079-1084).
- Before ErrorChecker runs, RCDiagWorker picks another checker: no plog at all -> 115; no plog gives
  a rank map (no ``Entry-HcclCommInitRootInfo`` / ``rankNum[..] rank[..]`` / ``totalRanks[``
  line, e.g. a rank-table launch) -> InvalidDeviceChecker, 114 (rc_diag_job.py:400-410).
- A2/A3 ``Entry-HcclCommInitRootInfo...: ranks[N], rank[R]`` lines match the A5 branch
  (parser.py:293-296, because they contain both ``ranks[`` and ``rank[``). That branch takes
  ``host ip[..]``, which is the *root's* host IP, as the device's server id (parser.py:512-514). So
  every rank of a rootinfo job gets the root server's IP as ``server_id``. The
  ``Cluster Exception Location[IP/ID]`` lookup (``server_device_map[(ip, id)]``) then finds only
  devices that are on the root's server.
- A device's id is ``phy_device_id or logic_device_id``. On A2/A3 the physical id comes only from
  ``devPhyId[`` / ``phydevId[`` lines or the hisi device_info map (parser.py:379-394). Otherwise
  the logical id (``deviceLogicId[``) is used, so a permuted ASCEND_RT_VISIBLE_DEVICES gives the
  logical id.
- The device IP used to resolve CQE targets (``remoteIP{..deviceIp[..]}``) comes only from a
  ``deviceIp[`` field on a ``rankNum[``/``totalRanks[`` line or from npu_info_*.txt
  (``hccn_tool -i N -ip -g``). The ``[LocalRank Key Info]`` line is not read.
- RootInfo connected ranks are taken verbatim from ``connected rankinfo[LINE 0]: [000..0],..``
  (parser.py:714-718) and compared with ``str(rank_id)`` (utils.py:1113), so the zero-padded ids
  never match.
- Training screen logs play no part in root-cluster diagnosis: they feed only the knowledge-graph
  job. A bundle with no plog gets 115. The real ``parse`` would even stop there with "No plog file
  that meets the path specifications is found." (rc_parse_job.py:134-138).

Where this emulation had to choose (the source leaves it to the collection layout or the runtime):
- Worker = node. ``ascend-fd parse`` runs once per node, and its output folder is the worker name.
  Here each immediate sub-folder of ``<bundle>/logs`` (or of the bundle) that holds
  ``plog-<pid>_<ts>.log`` files is one worker, named after the folder. Plogs lying directly in that
  folder form one worker named after the folder itself.
- ``os.walk`` order is filesystem order in the source. Here it is sorted, so pid order (which
  decides ties such as the "max identifier" and the first/last device at equal times) is
  deterministic.
- ``ErrorChecker.timeout_error_info_map`` and ``connected_device_with_identifier`` are class-level
  dicts in the source (utils.py:876-878), shared across runs in one process. Here they are per run,
  as if each bundle ran in a fresh process.
- No npu_info files, hisi device logs, BMC/LCNE or MindIE inputs: those maps stay empty. The user
  blacklist is empty (its default). The built-in DEFAULT_BLACKLIST applies.
- A5-only paths (EID planes, ``cqe error status[5]``) are kept where cheap, but they are untested.

The package, in the source's own order (parse, then diagnosis):
- keywords.py, faults.py: the source's keywords and limits; the fault codes and their strings.
- line_utils.py, parse_info.py: helpers on plog lines; what parsing one process yields.
- base_info_parser.py, error_parser.py, worker_parse.py: ``ascend-fd parse`` of one worker.
- devices.py, timeouts.py, checker.py: the device table, the wait chains and timeout errors,
  ErrorChecker's decision order.
- diag_job.py: ``ascend-fd diag`` on a bundle. score.py: that answer against the bundle's truth
  (not part of ascend-fd). __main__.py: the command line.
"""

from __future__ import annotations

from .diag_job import diagnose_bundle, diagnose_workers, find_workers
from .keywords import COMMIT, SRC
from .score import run
from .worker_parse import parse_worker

__all__ = ["COMMIT", "SRC", "diagnose_bundle", "diagnose_workers", "find_workers", "parse_worker", "run"]
