#!/usr/bin/env bash
# vlogs.sh — build VictoriaLogs, the log store the two-host test sends
# QP identity records to, once, from its pinned module version, and print
# the binary's path. Cached beside the guests' kernels (RDMATRACE_GUEST_CACHE,
# default guest/cache): victoria-logs-VERSION/victoria-logs. Needs Go and
# the module proxy (or a module cache holding the version); with an empty
# module cache the build takes about 9 minutes on two busy cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${RDMATRACE_GUEST_CACHE:-$here/cache}
# The version the tests are written against: the OTLP logs endpoint
# (/insert/opentelemetry/v1/logs), LogsQL's exact, range and stream
# filters, /internal/force_flush.
version=v1.52.2
module=github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs

dir=$cache/victoria-logs-$version
mkdir -p "$cache"
exec 9>"$cache/.vlogs.lock"
flock 9
if [ -x "$dir/victoria-logs" ]; then
	echo "$dir/victoria-logs"
	exit 0
fi
go=${GO:-go}
if ! command -v "$go" >/dev/null; then
	echo "guest: building VictoriaLogs $version needs Go ($go is not on PATH)" >&2
	exit 1
fi
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
echo "guest: building VictoriaLogs $version ($module)" >&2
start=$(date +%s)
# Static, without the caller's module flags (go install pkg@version
# ignores the current module, and a -mod flag would make it fail).
if ! env -u GOFLAGS CGO_ENABLED=0 GOBIN="$dir.tmp" "$go" install -trimpath -ldflags='-s -w' "$module@$version" >&2; then
	rm -rf "$dir.tmp"
	echo "guest: go install $module@$version failed (above)" >&2
	exit 1
fi
mv "$dir.tmp" "$dir"
echo "guest: VictoriaLogs $version built in $(($(date +%s) - start))s" >&2
echo "$dir/victoria-logs"
