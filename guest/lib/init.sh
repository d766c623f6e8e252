#!/bin/busybox sh
# The guest's first process (initramfs): load the modules for 9p and
# overlay, mount the host's / read-only with a tmpfs overlay on top, the
# kernel's modules and the exchange directory, then hand over to stage2.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /lib/mod/order); do
	insmod "/lib/mod/$m" 2>/dev/null
done
fail() {
	echo "guest init: $*" >/dev/ttyS0
	echo o >/proc/sysrq-trigger
}
opts=trans=virtio,version=9p2000.L,msize=524288
mkdir -p /mnt/host /mnt/rw
mount -t 9p -o "$opts,cache=loose,ro" hostroot /mnt/host || fail "cannot mount the host's / over 9p"
mount -t tmpfs -o mode=0755 rw /mnt/rw
mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay -o lowerdir=/mnt/host,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work overlay /newroot || fail "cannot mount the overlay"
kver=$(cat /kver)
mkdir -p "/newroot/usr/lib/modules/$kver"
mount -t 9p -o "$opts,cache=loose,ro" modules "/newroot/usr/lib/modules/$kver" || fail "cannot mount the modules"
mount -t tmpfs -o mode=0755 run /newroot/run
mkdir -p /newroot/run/guest-out
mount -t 9p -o "$opts" guestout /newroot/run/guest-out || fail "cannot mount the exchange directory"
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /run/guest-out/.guest/stage2.sh
