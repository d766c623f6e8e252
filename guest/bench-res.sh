#!/usr/bin/env bash
# Runs inside the guest (make bench): hold at least 1000 QPs open with
# perftest, then time `rdmatrace res qp -j` against `rdma -j res show qp` in
# the same run, alternating, and print the ratio of the medians.
set -euo pipefail
bin=${1:-bin/rdmatrace}
rounds=${ROUNDS:-15}
here=$(dirname "$0")

"$here/rdma-up.sh" >/dev/null
gid=$(for i in 0 1 2 3; do
	[ "$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i)" = 0000:0000:0000:0000:0000:ffff:0a63:0001 ] && echo $i && break
done)
# 2 x 500 RC QPs: an ib_write_bw server and client, each with -q 500 (and a
# send queue of 16, since the CQ holds tx-depth x QPs entries and rxe's CQs
# hold at most 32767).
ib_write_bw -d rxe0 -x "$gid" -q 500 -t 16 -D 600 -p 18600 >/dev/null 2>&1 &
sleep 1
ib_write_bw -d rxe0 -x "$gid" -q 500 -t 16 -D 600 -p 18600 10.99.0.1 >/dev/null 2>&1 &
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT

want=1000
for _ in $(seq 120); do
	n=$(rdma res show qp | grep -c 'type RC' || true)
	[ "$n" -ge "$want" ] && break
	sleep 1
done
[ "$n" -ge "$want" ] || { echo "only $n RC QPs after 120 s" >&2; exit 1; }
kill -STOP $(jobs -p)
total=$(rdma -j res show qp | grep -o '"lqpn"' | wc -l)
echo "QPs listed: $total (RC: $n)"

# Nanosecond wall times of one run each, alternating to share any drift.
time_ns() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null
	e=$(date +%s%N)
	echo $((e - s))
}
rd=() rt=()
for _ in $(seq "$rounds"); do
	rd+=("$(time_ns rdma -j res show qp)")
	rt+=("$(time_ns "$bin" res qp -j)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mrd=$(median "${rd[@]}")
mrt=$(median "${rt[@]}")
echo "rdma -j res show qp:  median $((mrd / 1000000)) ms over $rounds runs (${rd[*]} ns)"
echo "rdmatrace res qp -j:  median $((mrt / 1000000)) ms over $rounds runs (${rt[*]} ns)"
awk -v a="$mrt" -v b="$mrd" 'BEGIN { printf "ratio rdmatrace/rdma: %.3f\n", a / b }'
