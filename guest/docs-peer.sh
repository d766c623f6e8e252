#!/usr/bin/env bash
# Runs in the two guests of guest/pair (make docs-peer): the output of
# `rdmatrace peer` that docs/cookbook.md shows. Guest a (node-a) keeps the
# log store (VictoriaLogs) and traces with --otlp; guest b (node-b) runs
# the exporter with --otlp and an rping server, which a's rping client
# connects to over their link. a then asks the store who holds the QP at
# the other end, and once b has killed its server, what became of it.
#
#   guest/docs-peer.sh BIN/rdmatrace VICTORIA-LOGS-BINARY
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
vlogs=$2
here=$(cd "$(dirname "$0")" && pwd)
out=${GUEST_OUT:?run it in guest/pair}
export PATH=$(dirname "$bin"):$PATH
self=$RDMATRACE_PAIR_ADDR peer=$RDMATRACE_PAIR_PEER
store=http://10.98.1.1:9428
"$here/link-up.sh" "$self" >/dev/null || exit 1
cd /tmp

show() {
	local name=$1
	shift
	{
		echo "\$ $*"
		timeout 60 "$@" 2>&1
		local rc=$?
		[ $rc = 0 ] || echo "(exit status $rc)"
	} | tee "$out/$name.txt"
}
until_ok() { # SECONDS CMD...: run CMD every second until it succeeds
	local n=$1
	shift
	for _ in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "docs-peer: gave up on $*" >&2
	return 1
}
rts_of() { # PID: a QP of PID in RTS, with its numbers
	rdma res show qp | grep "state RTS .*pid $1 "
}

if [ "$RDMATRACE_PAIR_ROLE" = a ]; then
	"$vlogs" -storageDataPath /tmp/vl -httpListenAddr 10.98.1.1:9428 -loggerLevel WARN >/tmp/vl.log 2>&1 &
	until_ok 120 curl -sf $store/health
	rdmatrace trace --otlp $store/insert/opentelemetry/v1/logs --node node-a -w /tmp/a.ndjson --ready-file /tmp/a.ready 2>/dev/null &
	until_ok 120 test -e /tmp/a.ready
	# b's server listens once b has the store: try until the client connects.
	for _ in $(seq 60); do
		rping -c -a "$peer" -p 7174 -C 100000000 >/dev/null 2>&1 &
		client=$!
		until_ok 15 rts_of $client && break
		kill -9 $client 2>/dev/null
		wait $client 2>/dev/null
		sleep 2
	done
	show res-qp-a rdmatrace res qp pid $client
	rqpn=$(rts_of $client | sed -n 's/.* rqpn \([0-9]*\) .*/\1/p' | head -1)
	alive=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
	until_ok 60 sh -c "curl -s $store/internal/force_flush >/dev/null; rdmatrace peer --store $store $peer $rqpn"
	show peer rdmatrace peer --store $store "$peer" "$rqpn"
	# b kills its server; the client fails; the store learns the fate.
	for _ in $(seq 240); do
		kill -0 $client 2>/dev/null || break
		sleep 1
	done
	kill -9 $client 2>/dev/null
	wait $client
	echo "rping client exited with status $?" >"$out/client-exit.txt"
	until_ok 90 sh -c "curl -s $store/internal/force_flush >/dev/null; rdmatrace peer --store $store --at $alive $peer $rqpn | grep -q SIGKILL"
	show peer-at rdmatrace peer --store $store --at "$alive" "$peer" "$rqpn"
	show peer-at-j rdmatrace peer --store $store --at "$alive" "$peer" "$rqpn" -j
else
	until_ok 300 curl -sf $store/health
	rdmatrace exporter --listen 127.0.0.1:9879 --otlp $store/insert/opentelemetry/v1/logs --node node-b --ready-file /tmp/b.ready 2>/dev/null &
	until_ok 120 test -e /tmp/b.ready
	rping -s -a "$self" -p 7174 -C 100000000 >/dev/null 2>&1 &
	server=$!
	until_ok 600 rts_of $server
	sleep 60
	show res-qp-b rdmatrace res qp pid $server
	kill -9 $server
	sleep 90 # the exporter sends the QP's fate to the store
fi
