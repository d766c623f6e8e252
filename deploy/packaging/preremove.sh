#!/bin/sh
# Before removal, not before an upgrade (.deb: prerm remove; .rpm: %preun
# with 0): the exporter is stopped (its BPF programs detached, not left
# running from a deleted binary) and disabled (no multi-user.target.wants
# link left behind). Where systemd does not run (a container, a chroot),
# nothing runs to stop; the link still goes.
unit=rdmatrace-exporter.service
case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac
if [ -d /run/systemd/system ]; then
	if command -v deb-systemd-invoke >/dev/null 2>&1; then
		deb-systemd-invoke stop "$unit" >/dev/null 2>&1 || :
	else
		systemctl stop "$unit" >/dev/null 2>&1 || :
	fi
fi
# systemctl removes every link the unit's [Install] makes, whoever made
# it (an admin's systemctl enable too, which deb-systemd-helper, knowing
# only the links it made, would leave dangling); deb-systemd-helper then
# forgets its own record.
if command -v systemctl >/dev/null 2>&1; then
	systemctl --no-reload disable "$unit" >/dev/null 2>&1 || :
fi
if command -v deb-systemd-helper >/dev/null 2>&1; then
	deb-systemd-helper disable "$unit" >/dev/null 2>&1 || :
fi
exit 0
