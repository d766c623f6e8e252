#!/usr/bin/env bash
# Runs inside the guest (make demo): soft-RoCE on a guest-only veth, an
# rping pair, and rdmatrace's view of it.
set -euo pipefail
bin=${1:-bin/rdmatrace}
here=$(dirname "$0")

"$here/rdma-up.sh" >/dev/null
rping -s -a 10.99.0.1 -C 100000000 >/dev/null 2>&1 &
server=$!
sleep 1
rping -c -a 10.99.0.1 -C 100000000 >/dev/null 2>&1 &
client=$!
trap 'kill -9 $server $client 2>/dev/null || true' EXIT

for _ in $(seq 60); do
	[ -n "$("$bin" res cm_id -o text state CONNECT)" ] && break
	sleep 0.5
done

show() {
	echo
	echo "\$ rdmatrace $*"
	"$bin" "$@"
}
echo "rping server pid $server and client pid $client are connected over rxe0."
show dev
show link
show res
show res qp
show res cm_id
show res mr
show res cq -o text
show res cm_id state CONNECT -j
