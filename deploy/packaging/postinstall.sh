#!/bin/sh
# After install and upgrade (.deb: postinst configure [OLD]; .rpm: %post
# with 1 at install, 2 at upgrade): systemd rereads its units, and an
# upgrade restarts the exporter if it was running, so that it runs the new
# binary. An install enables and starts nothing: systemctl enable --now
# rdmatrace-exporter does that.
unit=rdmatrace-exporter.service
upgrade=no
case "$1" in
configure) [ -n "$2" ] && upgrade=yes ;;
2) upgrade=yes ;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$upgrade" = yes ]; then
		if command -v deb-systemd-invoke >/dev/null 2>&1; then
			deb-systemd-invoke try-restart "$unit" >/dev/null 2>&1 || :
		else
			systemctl try-restart "$unit" >/dev/null 2>&1 || :
		fi
	fi
fi
exit 0
