#!/usr/bin/env bash
# Runs inside the guest (make bench): what `rdmatrace trace` delivers under a
# resource churn, and what it costs the traced workloads.
#   bench-trace.sh BIN CHURN
set -euo pipefail
bin=${1:-bin/rdmatrace}
churn=${2:-out/churn}
rounds=${ROUNDS:-20000}
here=$(dirname "$0")
"$here/rdma-up.sh" >/dev/null

# cpu_ms PID: CPU time (user+system) a process has used, in ms.
cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"; } # CLK_TCK is 100

# trace_start ARGS...: start the tracer, wait until it is attached.
trace_start() {
	rm -f /tmp/ready
	"$bin" trace -j --no-snapshot --ready-file /tmp/ready "$@" >/dev/null 2>/tmp/trace.err &
	tracer=$!
	for _ in $(seq 300); do
		if [ -e /tmp/ready ]; then
			tracer_ready_cpu=$(cpu_ms "$tracer")
			return
		fi
		sleep 0.1
	done
	echo "tracer did not start" >&2; cat /tmp/trace.err >&2; exit 1
}
tracer_cpu=()
trace_stop() {
	tracer_cpu+=("$(($(cpu_ms "$tracer") - tracer_ready_cpu))") # while tracing, start-up not counted
	kill -INT "$tracer"; wait "$tracer"
	grep 'events:' /tmp/trace.err | sed 's/^rdmatrace: //'
}

echo "== churn: $rounds rounds of PD+CQ+MR alloc/free"
for ring in 4194304 16384; do
	trace_start --ring-size "$ring"
	s=$(date +%s%N)
	produced=$("$churn" rxe0 "$rounds" | awk '{print $4}')
	e=$(date +%s%N)
	sleep 1
	line=$(trace_stop)
	seen=$(echo "$line" | sed -nE 's/.* ([0-9]+) shown.*/\1/p')
	dropped=$(echo "$line" | sed -nE 's/.* ([0-9]+) dropped.*/\1/p')
	ms=$(((e - s) / 1000000))
	echo "ring $ring B: produced $produced in $ms ms; delivered $seen, dropped $dropped; delivered+dropped=$((seen + dropped)); delivered/s $((seen * 1000 / ms))"
done

# wait_listen PORT: until an rdma_cm ID listens on PORT (a client started
# before that fails, and its server then waits for ever).
wait_listen() {
	for _ in $(seq 100); do
		rdma res show cm_id | grep -q "state LISTEN .*src-addr [0-9.]*:$1 " && return
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
}

median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== ib_write_lat -R: median of t_typical over 5 runs each, alternating"
lat_port=18700
lat_run() {
	local server
	lat_port=$((lat_port + 1)) # a fresh port: no clash with the last run's
	timeout 120 ib_write_lat -d rxe0 -R -n 3000 -p $lat_port >/dev/null 2>&1 &
	server=$!
	wait_listen $lat_port
	timeout 120 ib_write_lat -d rxe0 -R -n 3000 -p $lat_port 10.99.0.1 2>/dev/null | awk '/^ *2 /{print $5}' || true
	wait "$server" || true # not a bare wait: the tracer runs in the background too
}
plain=() traced=()
for _ in 1 2 3 4 5; do
	plain+=("$(lat_run)")
	trace_start; traced+=("$(lat_run)"); trace_stop >/dev/null
done
p=$(median "${plain[@]}") t=$(median "${traced[@]}")
echo "t_typical us: without ${plain[*]} (median $p); with ${traced[*]} (median $t)"
awk -v a="$t" -v b="$p" 'BEGIN { printf "latency ratio with/without: %.3f\n", a / b }'

echo "== rping: connections per second, 20 sequential connections, ${CONN_RUNS:-9} runs each"
rping -s -P -a 10.99.0.1 -p 18800 >/dev/null 2>&1 &
server=$!
wait_listen 18800
conn_run() {
	local s e
	s=$(date +%s%N)
	for _ in $(seq 20); do timeout 30 rping -c -a 10.99.0.1 -p 18800 -C 1 >/dev/null 2>&1; done
	e=$(date +%s%N)
	awk -v n=20 -v ns=$((e - s)) 'BEGIN { printf "%.2f\n", n / (ns / 1e9) }'
}
conn_run >/dev/null # warm-up: the first run is slow (cold caches over 9p)
plain=() traced=()
for _ in $(seq "${CONN_RUNS:-9}"); do
	plain+=("$(conn_run)")
	trace_start; traced+=("$(conn_run)"); trace_stop >/dev/null
done
kill "$server"
p=$(median "${plain[@]}") t=$(median "${traced[@]}")
echo "rdmatrace trace CPU time while tracing, per traced run (20 connections): ${tracer_cpu[*]: -${CONN_RUNS:-9}} ms"

echo "== idle: tracer CPU time over 10 s with no RDMA activity"
trace_start
sleep 10
trace_stop >/dev/null
echo "idle tracer CPU: ${tracer_cpu[*]: -1} ms in 10 s"
echo "connections/s: without ${plain[*]} (median $p); with ${traced[*]} (median $t)"
awk -v a="$t" -v b="$p" 'BEGIN { printf "connection rate ratio with/without: %.3f (cost %.1f%%)\n", a / b, (1 - a / b) * 100 }'
