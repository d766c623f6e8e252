#!/usr/bin/env bash
# Runs inside the guest: what the filters pushed into the kernel save. The
# churn workload runs under `trace -j -p 1` (a pid that owns nothing), with
# the kernel filter and with --no-kernel-filter; for each, the events that
# reached user space and the tracer's CPU while the churn ran.
#   bench-filter.sh BIN CHURN
set -euo pipefail
bin=${1:-bin/rdmatrace}
churn=${2:-out/churn}
rounds=${ROUNDS:-10000}
runs=${RUNS:-3}
here=$(dirname "$0")
"$here/rdma-up.sh" >/dev/null
cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"; }

run() { # run LABEL ARGS...: prints "LABEL seen discarded cpu_ms"
	label=$1; shift
	rm -f /tmp/ready
	"$bin" trace -j --no-snapshot -p 1 --ready-file /tmp/ready "$@" >/dev/null 2>/tmp/err &
	pid=$!
	for _ in $(seq 300); do [ -e /tmp/ready ] && break; sleep 0.1; done
	c0=$(cpu_ms "$pid")
	"$churn" rxe0 "$rounds" >/dev/null
	sleep 1
	c1=$(cpu_ms "$pid")
	kill -INT "$pid"; wait "$pid" || true
	# what reached user space: every event seen but those the kernel discarded
	seen=$(sed -nE 's/.*events: ([0-9]+) seen.*/\1/p' /tmp/err)
	discarded=$(awk '/discarded/ {print $5}' /tmp/err)
	seen=$((seen - ${discarded:-0}))
	echo "$label ${seen:-?} ${discarded:-0} $((c1 - c0))"
}

echo "== $(uname -r): churn $rounds rounds, trace -p 1, $runs runs each"
for i in $(seq "$runs"); do
	run kernel-filter
	run user-filter --no-kernel-filter
done | tee /tmp/results
awk '{ seen[$1] += $2; disc[$1] += $3; cpu[$1] += $4; n[$1]++ }
END { for (l in n) printf("%s: %d events reached user space, %d discarded in the kernel, %.0f ms tracer CPU (means of %d)\n", l, seen[l]/n[l], disc[l]/n[l], cpu[l]/n[l], n[l]) }' /tmp/results
