#!/usr/bin/env bash
# Runs inside the guest: load the RDMA core and soft-RoCE, and create rxe0 on
# a guest-only veth with 10.99.0.1 (rdma_cm does not work over lo with rxe;
# vm-lab notes §3). Waits until the port is ACTIVE and the address's GID
# exists. Idempotent. `rdma-up.sh lo` also creates rxe_lo on lo.
set -euo pipefail

modprobe -a ib_core ib_cm iw_cm rdma_cm rdma_ucm ib_uverbs ib_umad rdma_rxe
if ! ip link show veth0 >/dev/null 2>&1; then
	ip link add veth0 type veth peer name veth1
	ip addr add 10.99.0.1/24 dev veth0
	ip link set veth0 up
	ip link set veth1 up
fi
[ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev veth0
if [ "${1:-}" = lo ] && [ ! -e /sys/class/infiniband/rxe_lo ]; then
	rdma link add rxe_lo type rxe netdev lo
fi

gid=0000:0000:0000:0000:0000:ffff:0a63:0001 # ::ffff:10.99.0.1
for _ in $(seq 100); do
	state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || true)
	if [[ $state == *ACTIVE* ]] && grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/[0-9] 2>/dev/null; then
		echo "rxe0 on veth0 (10.99.0.1) is ACTIVE"
		exit 0
	fi
	sleep 0.1
done
echo "rdma-up: rxe0 did not become ACTIVE with GID ::ffff:10.99.0.1 (state: ${state:-none})" >&2
exit 1
