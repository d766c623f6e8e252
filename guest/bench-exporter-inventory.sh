#!/usr/bin/env bash
# Runs inside the guest: the exporter and trace's start beside an
# inventory any user can make. nobody's pdhog holds N PDs and as many CQs
# as rxe0 allows (65 407 besides its own); then, for each binary given:
# the exporter is sent SIGTERM as soon as it serves (while it loads its
# tracer and reads the start snapshot), then started again to be ready,
# scraped twice and measured (VmHWM), and `trace -j --duration 1s` is
# timed with its start snapshot.
#   bench-exporter-inventory.sh PDHOG BIN [BIN...]
# The exporter runs with GOMEMLIMIT=192MiB, as the unit and the DaemonSet
# set it, and --web.timeout 300s: under the emulator one dump of 265 000
# objects takes minutes.
set -uo pipefail
pdhog=$1
shift
n=${N:-200000}
here=$(dirname "$0")
"$here/rdma-up.sh" >/dev/null || exit 1
cd /tmp
# nobody must reach pdhog through the 9p mount's directories.
d=$(dirname "$(realpath "$pdhog")"); while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null; d=$(dirname "$d"); done
setpriv --reuid=65534 --regid=65534 --clear-groups "$pdhog" rxe0 "$n" >/tmp/hog.out 2>&1 &
hog=$!
trap 'kill $hog 2>/dev/null' EXIT
t0=$(date +%s)
for _ in $(seq 900); do grep -q holding /tmp/hog.out && break; sleep 1; done
echo "== $(uname -r): $(cat /tmp/hog.out) after $(($(date +%s) - t0)) s"
secs() { awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $1 }"; }
for bin in "$@"; do
	echo "== $bin: SIGTERM as soon as it serves"
	"$bin" exporter --listen 127.0.0.1:9890 >/dev/null 2>/tmp/a.err &
	exp=$!
	for _ in $(seq 3000); do grep -q "serving metrics" /tmp/a.err && break; sleep 0.1; done
	t1=$(date +%s.%N)
	kill -TERM $exp
	for _ in $(seq 900); do kill -0 $exp 2>/dev/null || break; sleep 0.1; done
	if kill -0 $exp 2>/dev/null; then
		echo "still running 90 s after SIGTERM"
		kill -KILL $exp
	else
		echo "exited $(secs "$t1") s after SIGTERM"
	fi
	wait $exp 2>/dev/null

	echo "== $bin: ready, two scrapes"
	rm -f /tmp/ready
	t1=$(date +%s.%N)
	GOMEMLIMIT=192MiB "$bin" exporter --listen 127.0.0.1:9891 --web.timeout 300s --ready-file /tmp/ready >/dev/null 2>/tmp/b.err &
	exp=$!
	for _ in $(seq 9000); do [ -s /tmp/ready ] && break; kill -0 $exp 2>/dev/null || break; sleep 0.1; done
	echo "ready after $(secs "$t1") s"
	for _ in 1 2; do
		curl -s -m 400 -o /tmp/m -w "scrape %{http_code} in %{time_total} s, %{size_download} B\n" 127.0.0.1:9891/metrics
		grep -E '^rdma_resources\{device="rxe0",type="(pd|cq)"\}|^rdma_resources_by_owner.*pdhog.*type="(pd|cq)"' /tmp/m
	done
	grep -E "VmHWM|VmRSS" /proc/$exp/status | tr -s ' \t\n' ' '
	echo
	t1=$(date +%s.%N)
	kill -TERM $exp
	wait $exp 2>/dev/null
	echo "exited $(secs "$t1") s after SIGTERM"

	echo "== $bin: trace -j --duration 1s"
	/usr/bin/time -f "trace: %e s, maxrss %M kB" timeout -k 5 900 "$bin" trace -j --duration 1s >/tmp/t.out 2>/tmp/t.err
	echo "trace: rc $?, $(grep -c '' /tmp/t.out) lines"
	grep -v "hooks attached" /tmp/t.err | tail -3 | cut -c1-240
done
