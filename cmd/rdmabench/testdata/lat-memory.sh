#!/bin/sh
# Memory of a long `rdmabench lat -D` run, in the guest (docs/benchmarks.md,
# "A long lat run in constant memory"):
#   guest/run -k 6.12 -t 900 -c 'sh cmd/rdmabench/testdata/lat-memory.sh 480'
# prints VmHWM and VmRSS every 10 s of the run (the guest's clock), and the
# last values read before the process exited, then its report. Untraced;
# ARGS after the duration go to rdmabench (e.g. --rdmatrace bin/rdmatrace to
# trace it instead).
D=${1:-300}
shift 2>/dev/null
B=${B:-bin/rdmabench}
guest/rdma-up.sh >/dev/null || exit 1
trace=--no-trace
[ $# -gt 0 ] && trace=
$B lat -d rxe0 -D "$D" $trace "$@" >/tmp/lat-memory.out 2>&1 &
p=$!
t0=$(cut -d. -f1 /proc/uptime)
next=10
last=""
while kill -0 $p 2>/dev/null; do
	l=$(grep -h 'VmHWM\|VmRSS' /proc/$p/status 2>/dev/null | tr -s ' \t\n' ' ')
	[ -n "$l" ] && last="$l"
	t=$(($(cut -d. -f1 /proc/uptime) - t0))
	if [ $t -ge $next ]; then
		echo "mem t=${t}s $last"
		next=$((next + 10))
	fi
	sleep 0.5
done
echo "mem end t=$(($(cut -d. -f1 /proc/uptime) - t0))s (the last read) $last"
wait $p
echo "exit $?"
cat /tmp/lat-memory.out
