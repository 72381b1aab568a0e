#!/bin/sh
# A plain shell launcher (no torchrun): starts NPROC ranks of a script with the variables torch's
# env:// rendezvous reads, and waits for them. `triage watch` finds the ranks by their RANK.
#   watch_launcher.sh NPROC PORT script.py [ARGS...]    (PYTHON: the interpreter, default python3)
nproc=$1 port=$2
shift 2
export MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" WORLD_SIZE="$nproc"
pids=""
i=0
while [ "$i" -lt "$nproc" ]; do
    RANK=$i LOCAL_RANK=$i "${PYTHON:-python3}" -u "$@" &
    pids="$pids $!"
    i=$((i + 1))
done
code=0
for pid in $pids; do
    wait "$pid" || code=$?
done
exit "$code"
