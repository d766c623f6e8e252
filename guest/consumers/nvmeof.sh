#!/usr/bin/env bash
# Runs inside the guest: NVMe over Fabrics over RDMA in loopback on rxe0.
# The target (nvmet, nvmet-rdma) is set up through configfs with a null_blk
# namespace and listens on port 4420 of 10.99.0.1, or of every address with
# NVMEOF_LISTEN=0.0.0.0 (a wildcard listener, bound to no device: rdma_cm
# listens on each device through a child of it); the host side (nvme-rdma)
# connects to 10.99.0.1:4420 with nvme-cli, so both ends are kernel
# consumers of rxe0.
#   nvmeof.sh up     set up the target, connect, wait for the namespace
#   nvmeof.sh io     read and write the namespace (direct I/O)
#   nvmeof.sh down   disconnect and remove the target
# Needs rxe0 (guest/rdma-up.sh) and nvme-cli on the host.
set -euo pipefail

nqn=rdmatrace-nvmeof
addr=10.99.0.1
listen=${NVMEOF_LISTEN:-$addr}
port=4420
cfs=/sys/kernel/config/nvmet

# ns prints the block device of the connected namespace: the disk whose
# controller (or, with native multipath, subsystem) has our NQN. Not
# /sys/class/nvme/nvmeXcYnZ: that is a path of a multipath disk, with no
# device node.
ns() {
	for b in /sys/block/nvme*n*; do
		[ -e "$b/device/subsysnqn" ] || continue
		if [ "$(cat "$b/device/subsysnqn")" = "$nqn" ] && [ -b "/dev/${b##*/}" ]; then
			echo "/dev/${b##*/}"
			return 0
		fi
	done
	return 1
}

up() {
	modprobe -a null_blk nvmet nvmet-rdma nvme-rdma
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	[ -b /dev/nullb0 ] || { echo "nvmeof: no /dev/nullb0 after modprobe null_blk" >&2; exit 1; }
	if [ ! -d "$cfs/subsystems/$nqn" ]; then
		mkdir "$cfs/subsystems/$nqn"
		echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host"
		mkdir "$cfs/subsystems/$nqn/namespaces/1"
		echo /dev/nullb0 >"$cfs/subsystems/$nqn/namespaces/1/device_path"
		echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable"
	fi
	if [ ! -d "$cfs/ports/1" ]; then
		mkdir "$cfs/ports/1"
		echo rdma >"$cfs/ports/1/addr_trtype"
		echo ipv4 >"$cfs/ports/1/addr_adrfam"
		echo "$listen" >"$cfs/ports/1/addr_traddr"
		echo "$port" >"$cfs/ports/1/addr_trsvcid"
	fi
	[ -e "$cfs/ports/1/subsystems/$nqn" ] || ln -s "$cfs/subsystems/$nqn" "$cfs/ports/1/subsystems/$nqn"
	# One I/O queue: under emulation each queue costs a QP, a CQ and
	# seconds of connect.
	ns >/dev/null || nvme connect -t rdma -a "$addr" -s "$port" -n "$nqn" -i 1
	for _ in $(seq 100); do
		if dev=$(ns); then
			echo "nvmeof: $nqn connected over rdma $addr:$port as $dev"
			return 0
		fi
		sleep 0.1
	done
	echo "nvmeof: $nqn connected, but no namespace appeared" >&2
	exit 1
}

io() {
	dev=$(ns) || { echo "nvmeof: not connected" >&2; exit 1; }
	[ -b "$dev" ] || { echo "nvmeof: $dev is not a block device" >&2; exit 1; }
	dd if=/dev/zero of="$dev" bs=64k count=16 oflag=direct status=none
	dd if="$dev" of=/dev/null bs=64k count=16 iflag=direct status=none
	echo "nvmeof: wrote and read 1 MiB on $dev"
}

down() {
	nvme disconnect -n "$nqn" >/dev/null 2>&1 || true
	rm -f "$cfs/ports/1/subsystems/$nqn" 2>/dev/null || true
	rmdir "$cfs/ports/1" 2>/dev/null || true
	rmdir "$cfs/subsystems/$nqn/namespaces/1" 2>/dev/null || true
	rmdir "$cfs/subsystems/$nqn" 2>/dev/null || true
}

case "${1:-}" in
up | io | down) "$1" ;;
*)
	echo "usage: $0 up|io|down" >&2
	exit 2
	;;
esac
