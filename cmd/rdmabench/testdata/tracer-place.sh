#!/bin/sh
# Where rdmabench lat's tracer runs, and what it costs (docs/benchmarks.md,
# "Where the tracer runs"), in the guest:
#   guest/run -k 6.12 -t 1500 -c 'sh cmd/rdmabench/testdata/tracer-place.sh 3'
# N rounds of two traced runs (2 bytes, 3000 iterations): the tracer placed
# by rdmabench (auto: off the ends' CPUs, else the server's, nice 19) and
# left where the scheduler puts it (--tracer-cpus any). Each prints its
# headline and traced records, the events the tracer wrote, and each
# tracer thread's voluntary context switches at the last look (every
# 0.2 s; its start, hooks attaching, included).
N=${1:-3}
B=${B:-bin/rdmabench}
T=${T:-bin/rdmatrace}
guest/rdma-up.sh >/dev/null || exit 1
port=18600
i=1
while [ $i -le "$N" ]; do
	for place in auto any; do
		port=$((port + 10))
		dir=/tmp/tracer-place-$place-$i
		rm -rf "$dir"
		arg=
		[ $place = any ] && arg="--tracer-cpus any"
		$B lat -d rxe0 -p $port -n 3000 -j --rdmatrace $T --trace-dir "$dir" $arg >/tmp/tracer-place.out 2>/tmp/tracer-place.err &
		bench=$!
		tracer= last=
		while kill -0 $bench 2>/dev/null; do
			[ -z "$tracer" ] && tracer=$(pgrep -f -- "--follow-pid $bench" | head -1)
			if [ -n "$tracer" ]; then
				snap=$(for t in /proc/$tracer/task/*; do
					v=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null)
					[ -n "$v" ] && printf '%s:%s ' "${t##*/}" "$v"
				done)
				[ -n "$snap" ] && last=$snap
			fi
			sleep 0.2
		done
		wait $bench
		echo "== $place, round $i: status $?, tracer pid $tracer, events written $(wc -l <"$dir/trace.ndjson" 2>/dev/null)"
		echo "== voluntary switches per tracer thread (tid:count): $last"
		grep '"record":"summary"\|"record":"traced-summary"' /tmp/tracer-place.out
		sed 's/^/== stderr: /' /tmp/tracer-place.err
	done
	i=$((i + 1))
done
