#!/usr/bin/env bash
# Runs inside a guest of guest/pair: give eth0 (the NIC on the two guests'
# link) ADDR/24, load the RDMA core and soft-RoCE, and create rxe0 on eth0.
# Waits until the port is ACTIVE and ADDR's GID exists. Idempotent.
#
#   guest/link-up.sh ADDR        e.g. 10.98.1.1
set -euo pipefail
ip=${1:?usage: guest/link-up.sh ADDR}
if [ ! -e /sys/class/net/eth0 ]; then
	echo "link-up: no eth0: this guest has no NIC (guest/run -n, as guest/pair boots them)" >&2
	exit 1
fi
modprobe -a ib_core ib_cm iw_cm rdma_cm rdma_ucm ib_uverbs ib_umad rdma_rxe
ip addr replace "$ip/24" dev eth0
ip link set eth0 up
[ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev eth0

IFS=. read -r a b c d <<<"$ip"
gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
for _ in $(seq 200); do
	state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || true)
	if [[ $state == *ACTIVE* ]] && grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/[0-9] 2>/dev/null; then
		echo "rxe0 on eth0 ($ip) is ACTIVE"
		exit 0
	fi
	sleep 0.1
done
echo "link-up: rxe0 did not become ACTIVE with GID ::ffff:$ip (state: ${state:-none})" >&2
exit 1
