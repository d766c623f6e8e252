#!/bin/bash
# PID 1 in the guest's real root: mount the rest, run the command with its
# output on the second serial port, record its status, power off.
# No tmpfs over /tmp: the overlay already keeps the guest's writes in
# memory, and the checkout under test may itself live in the host's /tmp.
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
exch=/run/guest-out
# shellcheck disable=SC1091
. "$exch/.guest/env"
hostname "${GUEST_HOSTNAME:-rdmatrace-guest}"
ip link set lo up
# guest/run -n: a virtio-net NIC (eth0), its module from the kernel's tree.
[ -z "${GUEST_NIC:-}" ] || modprobe virtio_net
ulimit -l unlimited
ulimit -n 65536
echo 10 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

stty -F /dev/ttyS1 raw -echo 2>/dev/null
export GUEST_OUT=$exch HOME=/root
cd "$GUEST_CWD" || echo "guest: no directory $GUEST_CWD" >/dev/ttyS1
: >"$exch/.guest/started" # the host retries a boot that died before this
bash "$exch/.guest/cmd.sh" </dev/null >/dev/ttyS1 2>&1
rc=$?
echo "$rc" >"$exch/.guest/rc"
sync
echo o >/proc/sysrq-trigger
sleep 10
