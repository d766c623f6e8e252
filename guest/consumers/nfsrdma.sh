#!/usr/bin/env bash
# Runs inside the guest: NFS over RDMA in loopback on rxe0. The kernel's NFS
# server (nfsd, svcrdma) exports a tmpfs and listens for RDMA on
# 10.99.0.1:20049; the kernel's client (xprtrdma) mounts it with
# proto=rdma, so both ends are kernel consumers of rxe0.
#   nfsrdma.sh up     start the server, mount the export
#   nfsrdma.sh io     write and read a file through the mount
#   nfsrdma.sh down   unmount and stop the server
# Needs rxe0 (guest/rdma-up.sh), and nfs-kernel-server and nfs-common on the
# host.
set -euo pipefail

addr=10.99.0.1
port=20049
export_dir=/srv/rdmatrace-nfs
mnt=/mnt/rdmatrace-nfs

# mounted reads the mount table, never the mount point: once the device is
# gone, stat(2) on it (mountpoint(1)) waits for the server, for ever on a
# hard mount and timeo*retrans on a soft one.
mounted() { grep -q " $1 " /proc/self/mounts; }

up() {
	modprobe -a nfsd rpcrdma
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p "$export_dir" "$mnt" /var/lib/nfs/v4recovery /run/rpcbind
	mountpoint -q "$export_dir" || mount -t tmpfs -o size=64m tmpfs "$export_dir"
	# Started here, stopped by down: the tests after this one see the
	# guest's sockets as they were.
	pgrep -x rpcbind >/dev/null || { rpcbind && touch /run/rdmatrace-nfs.rpcbind; }
	exportfs -o rw,no_root_squash,insecure,fsid=0,no_subtree_check "*:$export_dir"
	pgrep -x rpc.mountd >/dev/null || rpc.mountd
	# A new server refuses new opens for its NFSv4 grace period (90 s)
	# unless its client-tracking database says no client is to reclaim;
	# kernels without the legacy tracker (Debian's 7.x) need nfsdcld for
	# that, which the guest does not run. No client ever used this server:
	# shorten the grace period to the kernel's minimum before it starts
	# (the files refuse a running server), then end it, as nfsdcld would,
	# where the kernel lets us (7.2 answered EBUSY; the 10 s remain).
	for f in nfsv4gracetime nfsv4leasetime; do
		if [ -e /proc/fs/nfsd/$f ]; then { echo 10 >/proc/fs/nfsd/$f || true; } 2>/dev/null; fi
	done
	rpc.nfsd -N 3 4
	if [ -e /proc/fs/nfsd/v4_end_grace ]; then
		{ echo Y >/proc/fs/nfsd/v4_end_grace || true; } 2>/dev/null
	fi
	grep -qx "rdma $port" /proc/fs/nfsd/portlist || echo "rdma $port" >/proc/fs/nfsd/portlist
	# Soft, with short timeouts: once rxe0 is deleted, a hard mount's
	# requests (the unmount's own too) would wait for ever.
	mounted "$mnt" || mount -t nfs4 -o proto=rdma,port=$port,soft,timeo=20,retrans=1 "$addr:/" "$mnt"
	echo "nfsrdma: $addr:/ mounted over rdma on $mnt"
}

io() {
	mounted "$mnt" || { echo "nfsrdma: $mnt is not mounted" >&2; exit 1; }
	dd if=/dev/zero of="$mnt/f" bs=64k count=16 conv=fsync status=none
	cmp -s -n 1048576 "$mnt/f" /dev/zero
	echo "nfsrdma: wrote and read 1 MiB in $mnt/f"
}

# span prints the seconds from $1 to $2 (two $EPOCHREALTIME).
span() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

down() {
	# Forced and lazy, with the path as the mount table has it (-c: no
	# stat) and no mount.nfs helper (-i): after its device went away,
	# requests wait for a transport.
	status=0
	t0=$EPOCHREALTIME
	if mounted "$mnt"; then
		timeout 30 umount -f -l -c -i "$mnt" || { echo "nfsrdma: umount -f -l $mnt failed" >&2; status=1; }
	fi
	t1=$EPOCHREALTIME
	rpc.nfsd 0 2>/dev/null || true
	exportfs -ua 2>/dev/null || true
	pkill -x rpc.mountd 2>/dev/null || true # the guest's own, started by up
	if [ -e /run/rdmatrace-nfs.rpcbind ]; then
		pkill -x rpcbind 2>/dev/null || true
		rm -f /run/rdmatrace-nfs.rpcbind
	fi
	t2=$EPOCHREALTIME
	# The lazy unmount returns at once; the client is gone once the kernel
	# lists no NFS volume.
	for _ in $(seq 100); do
		if [ ! -e /proc/fs/nfsfs/volumes ] || [ "$(wc -l </proc/fs/nfsfs/volumes)" -le 1 ]; then
			echo "nfsrdma: unmounted in $(span "$t0" "$t1") s, server stopped in $(span "$t1" "$t2") s, no NFS volume left $(span "$t2" "$EPOCHREALTIME") s later"
			return $status
		fi
		sleep 0.2
	done
	echo "nfsrdma: 20 s after the unmount the kernel still lists an NFS volume:" >&2
	cat /proc/fs/nfsfs/volumes >&2
	exit 1
}

case "${1:-}" in
up | io | down) "$1" ;;
*)
	echo "usage: $0 up|io|down" >&2
	exit 2
	;;
esac
