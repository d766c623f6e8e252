#!/usr/bin/env bash
# Runs inside the guest (make demo): soft-RoCE on a guest-only veth, an
# rping pair streamed live by `rdmatrace trace`, rdmatrace's snapshot view of
# it, and `rdmatrace leaks` naming what holds rxe0 when it is deleted.
set -euo pipefail
bin=${1:-bin/rdmatrace}
here=$(dirname "$0")

"$here/rdma-up.sh" >/dev/null

echo "\$ rdmatrace trace --no-snapshot --filter-comm rping &   # the live stream, while an rping pair connects"
"$bin" trace --no-snapshot --filter-comm rping --ready-file /tmp/trace.ready 2>/tmp/trace.err &
tracer=$!
while [ ! -e /tmp/trace.ready ]; do sleep 0.2; done
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
sleep 1
kill -INT "$tracer"
wait "$tracer" || true
sed 's/^/  (stderr) /' /tmp/trace.err | tail -2

show() {
	echo
	echo "\$ rdmatrace $*"
	"$bin" "$@"
}
echo
echo "rping server pid $server and client pid $client are connected over rxe0."
show dev
show link
show res
show res qp
show res cm_id
show res mr
show res cq -o text
show res cm_id state CONNECT -j

echo
echo "The rpings are stopped and rxe0 is deleted: the kernel waits for them, and"
echo "\`rdma res\` goes blind. rdmatrace names what holds the device:"
echo "\$ rdmatrace leaks --filter-dev rxe0 --interval 3s &; rdma link delete rxe0 &; sleep 7; kill -9 rpings"
"$bin" leaks --filter-dev rxe0 --interval 3s --ready-file /tmp/leaks.ready 2>/tmp/leaks.err &
leaks=$!
while [ ! -e /tmp/leaks.ready ]; do sleep 0.2; done
kill -STOP "$server" "$client"
rdma link delete rxe0 &
delete=$!
sleep 7
kill -9 "$server" "$client"
wait "$delete"
sleep 1
kill -INT "$leaks"
wait "$leaks" || echo "(rdmatrace leaks exited with status $?: leaks were reported)"
