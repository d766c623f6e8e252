#!/usr/bin/env bash
# guest/e2e-tests.sh — run the e2e test binary inside a guest; with
# RDMATRACE_E2E_RERUN=1 (the landing path), run the top-level tests that
# failed once more, together, before calling them failed.
#
#   guest/e2e-tests.sh E2E_BINARY -test.v -test.run PATTERN [ARGS...]
#
# Under the emulator a guest's timing varies several-fold with the host's
# load, and a test that waits on the kernel can miss its bound on a busy
# machine. A test that fails twice fails; one that passes the second time
# is named as flaky, in the output and in $GUEST_OUT/digest.txt with what
# it said when it failed, so that it is seen and mended, not hidden. A run
# that panicked or timed out is not run again: tests after the panic never
# ran. The last line is a tally: passed, failed, skipped, flaky.
set -uo pipefail
bin=$1
shift
out=${GUEST_OUT:-$(mktemp -d)}
first=$out/e2e-first.log second=$out/e2e-second.log digest=$out/digest.txt
rm -f "$first" "$second" "$digest"

"$bin" "$@" 2>&1 | tee "$first"
rc=${PIPESTATUS[0]}

failed_in() { sed -n 's/^--- FAIL: \(Test[A-Za-z0-9_]*\) .*/\1/p' "$1" | sort -u; }
count() { grep -c "^--- $1:" "$2"; }

# What a failed test said: its log lines (file_test.go:N: and their
# indented continuations) and its failed subtests, at most 40 lines.
said() {
	awk -v t="$1" '
		$0 == "=== RUN   " t { on = 1; next }
		on && index($0, "--- FAIL: " t " (") == 1 { exit }
		on && /^ +[A-Za-z0-9_]+_test\.go:[0-9]+:/ { keep = 1; print; n++; next }
		on && keep && /^        / { print; n++; next }
		on && /^ +--- FAIL:/ { print; n++ }
		{ keep = 0 }
		n >= 40 { print "    [...]"; exit }' "$2"
}

failed=$(failed_in "$first")
passed=$(count PASS "$first") skipped=$(count SKIP "$first") flaky="" nfailed=$(echo "$failed" | grep -c .)
if [ "$rc" != 0 ] && [ -n "$failed" ] && [ "${RDMATRACE_E2E_RERUN:-0}" = 1 ] &&
	! grep -qE '^panic: |^FAIL .* \(timeout\)|test timed out after' "$first"; then
	pattern="^($(echo $failed | tr ' ' '|'))\$"
	echo "== e2e: $(echo $failed) failed; running them once more"
	args=()
	while [ $# -gt 0 ]; do
		case $1 in
		-test.run) args+=("$1" "$pattern"); shift 2 ;;
		-test.run=*) args+=("-test.run=$pattern"); shift ;;
		*) args+=("$1"); shift ;;
		esac
	done
	"$bin" "${args[@]}" 2>&1 | tee "$second"
	rc=${PIPESTATUS[0]}
	again=$(failed_in "$second")
	for t in $failed; do
		if ! echo "$again" | grep -qx "$t" && grep -q "^--- PASS: $t " "$second"; then
			flaky="$flaky $t"
			passed=$((passed + 1))
			nfailed=$((nfailed - 1))
			{ echo "flaky: $t failed, then passed when run again; the first time it said:"; said "$t" "$first"; } >>"$digest"
		else
			{ echo "failed twice: $t; the first time it said:"; said "$t" "$first"; echo "  and the second time:"; said "$t" "$second"; } >>"$digest"
		fi
	done
	# A failure of the second run outside the tests (a panic) stays one.
	if [ "$rc" != 0 ] && [ "$(echo "$again" | grep -c .)" = 0 ]; then
		echo "the second run failed outside its tests (exit $rc)" >>"$digest"
		nfailed=$((nfailed + 1))
	fi
else
	for t in $failed; do
		{ echo "failed: $t; it said:"; said "$t" "$first"; } >>"$digest"
	done
	if grep -q '^panic: ' "$first"; then
		{ echo "the run panicked:"; sed -n '/^panic: /,$p' "$first" | head -n 12 | sed 's/^/    /'; } >>"$digest"
	fi
fi
[ -z "$flaky" ] || echo "== e2e flaky (failed, then passed when run again):$flaky"
echo "== e2e tally: $passed passed, $nfailed failed, $skipped skipped, $(echo $flaky | wc -w) flaky"
exit "$rc"
