#!/usr/bin/env bash
# Runs inside the guest: the tracer's CPU per event against bpftrace
# printing the same fields from the same hooks (restrack add/del and
# begin_del/commit_del: the hooks the churn workload fires), on the churn
# workload, in one boot.
# Both write to a file on the guest's tmpfs; CPU is the tracer process's
# user+system time from just before the churn to after its events are
# written (start-up not counted). The BPF programs' own time is the
# workload's in both cases and is not compared here.
#   bench-bpftrace.sh BIN CHURN      (host: apt-get install bpftrace)
set -euo pipefail
bin=${1:-bin/rdmatrace}
churn=${2:-out/churn}
rounds=${ROUNDS:-10000}
runs=${RUNS:-3}
here=$(dirname "$0")
command -v bpftrace >/dev/null || { echo "bench-bpftrace: no bpftrace (apt-get install bpftrace on the host)" >&2; exit 1; }
"$here/rdma-up.sh" >/dev/null

cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"; } # CLK_TCK is 100

# The fields of `trace -j` for these events: time, event, type, id,
# owner process, comm, kernel owner, cgroup, acting thread.
prog='
kretfunc:ib_core:rdma_restrack_add { $r = args->res;
  printf("%llu create %d %u %d %s %s %llu %d\n", nsecs, $r->type, $r->id, $r->task->tgid, comm, str($r->kern_name), cgroup, tid); }
kfunc:ib_core:rdma_restrack_del { $r = args->res;
  printf("%llu destroy %d %u %d %s %s %llu %d\n", nsecs, $r->type, $r->id, $r->task->tgid, comm, str($r->kern_name), cgroup, tid); }
kfunc:ib_core:rdma_restrack_begin_del { $r = args->res;
  printf("%llu destroy_begin %d %u %d %s %s %llu %d\n", nsecs, $r->type, $r->id, $r->task->tgid, comm, str($r->kern_name), cgroup, tid); }
kfunc:ib_core:rdma_restrack_commit_del { $r = args->res;
  printf("%llu destroy %d %u %d %s %s %llu %d\n", nsecs, $r->type, $r->id, $r->task->tgid, comm, str($r->kern_name), cgroup, tid); }
'

# run TOOL: one churn under TOOL; prints "TOOL events cpu_ms churn_ms".
run() {
	rm -f /tmp/out /tmp/ready
	case $1 in
	rdmatrace)
		"$bin" trace -j --no-snapshot --ready-file /tmp/ready >/tmp/out 2>/tmp/err &
		pid=$!
		for _ in $(seq 300); do [ -e /tmp/ready ] && break; sleep 0.1; done
		;;
	bpftrace)
		bpftrace -e "$prog" >/tmp/out 2>/tmp/err &
		pid=$!
		for _ in $(seq 600); do grep -q Attaching /tmp/out 2>/dev/null && break; sleep 0.1; done
		sleep 3 # "Attaching" comes before the probes are attached
		;;
	esac
	c0=$(cpu_ms "$pid")
	s=$(date +%s%N)
	"$churn" rxe0 "$rounds" >/dev/null
	e=$(date +%s%N)
	sleep 2 # what is queued is written
	c1=$(cpu_ms "$pid")
	kill -INT "$pid"; wait "$pid" || true
	n=$(grep -cE '(create|destroy)' /tmp/out || true)
	if [ "$1" = rdmatrace ] && [ ! -e /tmp/kinds ]; then
		grep -o '"event":"[a-z_]*","res":"[a-z_]*"' /tmp/out | sort | uniq -c >/tmp/kinds
	fi
	if [ "$1" = bpftrace ] && [ ! -e /tmp/btkinds ]; then
		awk '$2 ~ /create|destroy/ {print $2, $3}' /tmp/out | sort | uniq -c >/tmp/btkinds
	fi
	echo "$1 $n $((c1 - c0)) $(((e - s) / 1000000))"
}

rm -f /tmp/kinds /tmp/btkinds
echo "== $(uname -r): churn $rounds rounds (PD+CQ+MR alloc/free), $runs runs each, alternating"
for i in $(seq "$runs"); do
	run rdmatrace
	run bpftrace
done | tee /tmp/results
awk '
{ ev[$1] += $2; cpu[$1] += $3; wall[$1] += $4; n[$1]++ }
END {
	for (t in ev) printf("%s: %d events, %.1f ms CPU, %.2f us CPU per event, churn %.0f ms\n", t, ev[t]/n[t], cpu[t]/n[t], cpu[t]*1000/ev[t], wall[t]/n[t])
	if (ev["bpftrace"] > 0 && ev["rdmatrace"] > 0)
		printf("ratio (rdmatrace / bpftrace CPU per event): %.2f\n", (cpu["rdmatrace"]/ev["rdmatrace"]) / (cpu["bpftrace"]/ev["bpftrace"]))
}' /tmp/results
echo "events of one rdmatrace run:"; cat /tmp/kinds
echo "events of one bpftrace run (event, restrack type):"; cat /tmp/btkinds
