#!/usr/bin/env bash
# guest/corpus-table.sh [E2E_OUT] — puts the "fault → what why says" table
# that TestFaultCorpus left in E2E_OUT/corpus/faults.md (default
# out/e2e-6.12, as `make e2e KERNELS=6.12 E2E_RUN=TestFaultCorpus` leaves
# it) into docs/trace.md, between its corpus markers. `make corpus-table`
# runs the test and this.
set -euo pipefail
cd "$(dirname "$0")/.."
table=${1:-out/e2e-6.12}/corpus/faults.md
doc=docs/trace.md
begin='<!-- fault corpus: begin -->'
end='<!-- fault corpus: end -->'
if [ ! -s "$table" ]; then
	echo "corpus-table: no $table: run make e2e KERNELS=6.12 E2E_RUN=TestFaultCorpus first" >&2
	exit 1
fi
if ! grep -qxF "$begin" "$doc" || ! grep -qxF "$end" "$doc"; then
	echo "corpus-table: $doc has no lines '$begin' and '$end'" >&2
	exit 1
fi
tmp=$(mktemp "$doc.XXXXXX")
trap 'rm -f "$tmp"' EXIT
awk -v begin="$begin" -v end="$end" -v table="$table" '
	$0 == begin { print; while ((getline l < table) > 0) print l; skip = 1; next }
	$0 == end { skip = 0 }
	!skip { print }
' "$doc" >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$doc"
trap - EXIT
echo "corpus-table: $doc now has $(grep -c '^| ' "$table") rows from $table"
