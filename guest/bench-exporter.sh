#!/usr/bin/env bash
# Runs inside the guest: the exporter's cost. (1) Its scrape time with many
# live objects: the churn workload holds HOLD PD+CQ+MR triples (3 x HOLD
# objects) and /metrics is fetched RUNS times by curl, timed with date's
# nanoseconds around it; iproute2's same dumps are timed alike, for
# scale. (2) Its memory under a churn of
# ROUNDS rounds (8 events each): VmRSS before and after, and VmHWM.
#   bench-exporter.sh BIN CHURN
set -euo pipefail
bin=${1:-bin/rdmatrace}
churn=${2:-out/churn}
hold=${HOLD:-3400}
rounds=${ROUNDS:-20000}
runs=${RUNS:-5}
here=$(dirname "$0")
"$here/rdma-up.sh" >/dev/null
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

rm -f /tmp/ready
"$bin" exporter --listen 127.0.0.1:0 --ready-file /tmp/ready 2>/tmp/exporter.err &
exp=$!
trap 'kill $exp 2>/dev/null; kill $holder 2>/dev/null || true' EXIT
for _ in $(seq 600); do [ -s /tmp/ready ] && break; sleep 0.1; done
addr=$(cat /tmp/ready)
scrape() { # prints the scrape's wall time in ms and its series count
	local t0 t1
	t0=$(date +%s%N)
	curl -s "http://$addr/metrics" >/tmp/metrics
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000000)) $(grep -vc '^#' /tmp/metrics)"
}
echo "== $(uname -r): exporter with $((hold * 3)) held objects, $runs scrapes"
# The same reads by iproute2, for scale: every type's dump and the port
# counters, as one scrape makes them.
reference() {
	local t0 t1
	t0=$(date +%s%N)
	for typ in pd cq qp cm_id mr ctx srq; do rdma -j res show "$typ" >/dev/null; done
	rdma -j statistic show >/dev/null
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000000))"
}
scrape >/dev/null
echo "idle: $(scrape) (ms, series); iproute2's reads: $(reference) ms"
"$churn" rxe0 "$hold" hold >/tmp/holder.out &
holder=$!
for _ in $(seq 3000); do grep -q holding /tmp/holder.out 2>/dev/null && break; sleep 0.1; done
echo "rdma res show: $(rdma res show | head -1)"
for i in $(seq "$runs"); do scrape; done | tee /tmp/scrapes
echo "iproute2's reads at $((hold * 3)) held objects: $(reference) ms, $(reference) ms, $(reference) ms"
sort -n /tmp/scrapes | awk '{ a[NR] = $1; s = $2 } END { printf("scrape at %d held objects: median %d ms, min %d, max %d; %d series\n", '"$hold"' * 3, a[int((NR + 1) / 2)], a[1], a[NR], s) }'
kill "$holder"; wait "$holder" 2>/dev/null || true
sleep 2
echo "exporter: VmRSS $(kb $exp VmRSS) kB before the churn"
"$churn" rxe0 "$rounds" >/dev/null
sleep 2
scrape >/dev/null
echo "exporter: VmRSS $(kb $exp VmRSS) kB after $rounds churn rounds ($((rounds * 8)) events), VmHWM $(kb $exp VmHWM) kB"
grep -E '^rdma_resource_creates_total|^rdmatrace_events_dropped_total|^rdmatrace_live_untracked_total' /tmp/metrics | head
