#!/bin/sh
# After removal and after the old files of an upgrade went (.deb: postrm;
# .rpm: %postun): systemd rereads its units, when it runs. On purge,
# deb-systemd-helper forgets the unit's enablement state.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
if [ "$1" = purge ] && command -v deb-systemd-helper >/dev/null 2>&1; then
	deb-systemd-helper purge rdmatrace-exporter.service >/dev/null 2>&1 || :
fi
exit 0
