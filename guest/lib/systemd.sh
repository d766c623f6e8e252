# Sourced inside the guest: systemd as the service manager of a container
# (its own pid, mount and cgroup namespaces; the guest's PID 1 is our
# stage2 script, not systemd), so that packages' maintainer scripts and
# units meet a real systemd: systemd_start boots it to an empty target,
# sd CMD... runs a command where systemd is PID 1 (its /run, with
# /run/systemd/system, which the scripts test for), systemd_stop ends it.
# The guest's network namespace is shared: its services' listeners are
# reached from outside as usual.

systemd_start() {
	local t0=$SECONDS
	mkdir -p /etc/systemd/system /sys/fs/cgroup/systemd-container
	# Nothing of the host's root to start: a target of its own.
	printf '[Unit]\nDescription=the guest'"'"'s services under test\n' >/etc/systemd/system/guest-test.target
	# systemd wants a cgroup subtree of its own, with the controllers its
	# units' limits need: the namespace's first process moves to one,
	# which the new cgroup namespace makes its root.
	echo '+memory +pids' >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || :
	sh -c 'echo $$ >/sys/fs/cgroup/systemd-container/cgroup.procs && exec unshare --pid --fork --mount --cgroup --propagation private sh -c "
		mount -t proc proc /proc
		mount -t tmpfs -o mode=0755 tmpfs /run
		umount /sys/fs/cgroup 2>/dev/null; mount -t cgroup2 cgroup2 /sys/fs/cgroup
		exec env container=rdmatrace-guest /lib/systemd/systemd --system --unit=guest-test.target --log-target=console --log-level=notice
	"' >/tmp/systemd.log 2>&1 &
	systemd_unshare=$!
	systemd_pid=
	for _ in $(seq 100); do
		systemd_pid=$(tr -d ' \n' </proc/$systemd_unshare/task/$systemd_unshare/children 2>/dev/null)
		[ -n "$systemd_pid" ] && break
		sleep 0.1
	done
	[ -n "$systemd_pid" ] || { cat /tmp/systemd.log >&2; echo "systemd did not start" >&2; return 1; }
	# Under the emulator systemd takes half a minute to its target.
	local state
	for _ in $(seq 600); do
		state=$(sd systemctl is-system-running 2>/dev/null) || true
		case $state in running | degraded) break ;; esac
		sleep 0.2
	done
	case $state in
	running | degraded) echo "systemd $(sd systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') running as a container's PID 1 ($state, in $((SECONDS - t0))s)" ;;
	*) cat /tmp/systemd.log >&2; echo "systemd is not running: $state" >&2; return 1 ;;
	esac
}

# In the directory of the caller (entering a mount namespace moves to its
# root).
sd() { nsenter -t "$systemd_pid" -m -p --wd="$PWD" -- "$@"; }

systemd_stop() {
	[ -n "${systemd_pid:-}" ] || return 0
	kill -KILL "$systemd_pid" 2>/dev/null || :
	wait "$systemd_unshare" 2>/dev/null || :
}
