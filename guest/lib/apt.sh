# guest/lib/apt.sh — sourced by kernel.sh and kmod.sh: which Debian package
# a kernel series comes from, and the apt commands that see its suite.
#
# 6.1 and 6.12 are bookworm's, the host's own suites. 5.10 (bullseye) and
# sid come from a private apt configuration under the harness cache: its
# own sources list, lists and archive cache, and an empty dpkg status, so
# the host's apt is never pointed at those suites and nothing from them can
# be installed on the host (we only `apt-get download` and unpack).

# kernel_series SERIES: sets meta (the metapackage whose dependency names
# the current ABI's image) and apt_opts (options for apt-get/apt-cache).
kernel_series() {
	apt_opts=(-o APT::Sandbox::User=root)
	case $1 in
	6.1) meta=linux-image-amd64 ;;
	6.12) meta=linux-image-6.12-amd64 ;;
	5.10)
		# bullseye-security carries the newest 5.10 ABI (LTS); -updates
		# is listed for completeness.
		meta=linux-image-amd64
		private_apt bullseye \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main" \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye-updates main" \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bullseye-security main"
		;;
	6.1-arm64)
		# Only for bpf/gen-vmlinux.sh: the arm64 build of bookworm's
		# kernel, whose BTF makes bpf/vmlinux_arm64.h. Never booted.
		meta=linux-image-arm64 apt_arch=arm64
		private_apt bookworm-arm64 \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main" \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main"
		;;
	sid)
		meta=linux-image-amd64
		private_apt sid \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main"
		;;
	*)
		echo "guest: unknown kernel series '$1': use 5.10, 6.1, 6.12 or sid (Debian's newest)" >&2
		exit 2
		;;
	esac
}

# private_apt NAME SOURCE-LINE...: a private apt root under the cache,
# refreshed when its lists are missing or older than a day (a new ABI is
# then fetched anew; RDMATRACE_GUEST_APT_MAXAGE overrides, in minutes).
private_apt() {
	local name=$1
	shift
	local d=$cache/apt/$name
	mkdir -p "$d/lists/partial" "$d/archives/partial" "$d/parts" "$d/prefs"
	: >>"$d/status"
	apt_opts+=(
		-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/parts"
		-o "Dir::Etc::Preferences=$d/prefs/none" -o "Dir::Etc::PreferencesParts=$d/prefs"
		-o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/status"
		-o "Dir::Cache=$d" -o "Dir::Cache::archives=$d/archives"
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
		-o Acquire::Languages=none -o "APT::Architectures::=${apt_arch:-amd64}" -o "APT::Architecture=${apt_arch:-amd64}"
	)
	(
		flock 8
		printf '%s\n' "$@" >"$d/sources.list.new"
		local maxage=${RDMATRACE_GUEST_APT_MAXAGE:-1440}
		if ! cmp -s "$d/sources.list.new" "$d/sources.list" ||
			[ ! -f "$d/updated" ] || [ -n "$(find "$d/updated" -mmin +"$maxage")" ]; then
			mv "$d/sources.list.new" "$d/sources.list"
			echo "guest: apt-get update for $name (private lists in $d)" >&2
			apt-get "${apt_opts[@]}" -qq update >&2
			touch "$d/updated"
		fi
		rm -f "$d/sources.list.new"
	) 8>"$d/.lock"
}
