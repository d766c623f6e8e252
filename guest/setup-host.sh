#!/usr/bin/env bash
# Installs, from Debian's archive, what the guest harness needs, and with
# "test" what the tests need besides. Quick when everything is already
# there. Never upgrades an installed package (--no-upgrade) and starts no
# service. make build needs none of this.
#
#   guest/setup-host.sh          the guest harness: qemu, busybox, rdma-core's tools (guest/run, make demo)
#   guest/setup-host.sh test     and the tests' tools: perftest, bpftool, prometheus, shells, gcc and
#                                rdma-core's headers, rpm (make check, unit, e2e, bench, capture)
set -euo pipefail

# The guest's root is the host's: what runs in the guest is installed here.
packages=(qemu-system-x86 busybox-static kmod xz-utils zstd rdma-core ibverbs-utils ibverbs-providers
	rdmacm-utils iproute2 util-linux procps)
case ${1:-guest} in
guest) ;;
test)
	packages+=(perftest bpftool
		prometheus # the exporter's guest test scrapes with a real server; promtool checks the alerts
		fish zsh   # the completion scripts' tests run them
		rpm        # the package smoke inspects and installs the .rpm
		systemd curl # the package smoke's service manager (a container's PID 1 in the guest) and its scrape
		dwarves    # pahole: the RDMA modules' BTF for 5.10's trace test (guest/modbtf.sh)
		nvme-cli nfs-kernel-server nfs-common # the kernel consumers in guest/consumers (guest/consumers/packages)
		gcc libc6-dev libibverbs-dev librdmacm-dev) # our own workloads (guest/workloads) and rdmabench's loops (internal/rdmabench/verbs) are C
	;;
*)
	echo "usage: guest/setup-host.sh [test]" >&2
	exit 2
	;;
esac

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
# apt-cache needs package lists to resolve the kernel packages.
lists=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' 2>/dev/null | head -1)
if [ ${#missing[@]} -eq 0 ] && [ -n "$lists" ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "guest: the harness installs Debian's packages with apt-get, which this system lacks; install ${missing[*]:-nothing} by hand, or run the guest tests on Debian 12" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "guest: need root to install ${missing[*]:-package lists} (apt-get)" >&2
	exit 1
fi
echo "guest: installing ${missing[*]:-package lists}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
if [ ${#missing[@]} -gt 0 ]; then
	# The packages are tools for the guest: start none of their services
	# here (prometheus would otherwise run beside the timing tests).
	# policy-rc.d is Debian's way to say so to invoke-rc.d; ours only
	# while we install.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" >&2
fi
