#!/bin/sh
# lat with and without the tracer, alternating in one boot: rdmabench lat
# -j --no-trace, then traced (rdmatrace trace beside it, following it),
# ROUNDS times; prints each run's t_typical and the ratio of the medians.
# Usage (in the guest): guest/bench-lat-trace.sh BIN_DIR [ITERS] [ROUNDS]
set -eu
bin=$1 iters=${2:-5000} rounds=${3:-5}
guest/rdma-up.sh >/dev/null
typical() { sed -n 's/.*"record":"summary".*"t_typical":\([0-9.]*\).*/\1/p' | head -1; }
"$bin/rdmabench" lat -j --no-trace -n 1000 >/dev/null # warm-up
plain="" traced=""
for i in $(seq "$rounds"); do
	p=$("$bin/rdmabench" lat -j --no-trace -n "$iters" | typical)
	t=$("$bin/rdmabench" lat -j --rdmatrace "$bin/rdmatrace" -n "$iters" | typical)
	echo "round $i: t_typical untraced $p us, traced $t us"
	plain="$plain $p" traced="$traced $t"
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mp=$(median $plain) mt=$(median $traced)
echo "median t_typical: untraced $mp us, traced $mt us, ratio $(awk "BEGIN {printf \"%.3f\", $mt/$mp}")"
