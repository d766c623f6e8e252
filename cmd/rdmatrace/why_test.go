package main

import (
	"strconv"
	"strings"
	"testing"
)

// why -r on a recording of rping's failures on Linux 6.12 (a connect to a
// port nobody listens on, an address no one answers ARP for, one with no
// route, one with no route from a bound source): the human view and -j,
// whole and by owner; neither BPF nor root.
func TestWhyReadsARecordingGoldens(t *testing.T) {
	t.Setenv("TZ", "UTC")
	rec := "../../testdata/why/rping-failures.ndjson"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"why-rping.txt", []string{"why", "-r", rec}},
		{"why-rping.ndjson", []string{"why", "-r", rec, "-j"}},
		{"why-rping-pid.txt", []string{"why", "-r", rec, "--pid", "231"}},
		{"why-rping-qpn.txt", []string{"why", "-r", rec, "--qpn", "17"}},
		{"why-nobody.txt", []string{"why", "-r", rec, "--comm", "nobody"}},
	} {
		stdout, stderr, code := rdmatrace(t, tc.args...)
		goldenCLI(t, tc.name, stdout+"--- stderr\n"+stderr+"--- exit status "+strconv.Itoa(code)+"\n")
		if code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}

func TestWhyUsageErrorsSayWhatIsExpected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"why", "rping"}, `why: unexpected argument "rping"`},
		{[]string{"why", "--qpn", "16777216", "-r", "x"}, "a QP number has 24 bits"},
		{[]string{"why", "--no-answer", "-1s", "-r", "x"}, "--no-answer -1s"},
		{[]string{"why", "--pid", "x", "-r", "x"}, `filter pid: bad number "x"`},
	} {
		_, stderr, code := rdmatrace(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// why --store names each failed QP's peer in its sentence; a store that
// cannot be asked is said there, and the other failures are as they
// were. --node goes with --store.
func TestWhyStoreNamesTheFailedQPsPeer(t *testing.T) {
	t.Setenv("TZ", "UTC")
	out, stderr, code := rdmatrace(t, "why", "-r", "../../testdata/formats/failures.ndjson", "--store", "http://127.0.0.1:9", "--node", "node-a")
	named := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "qp 17 ") {
			if !strings.Contains(l, "; its peer QP 18 at ::ffff:10.99.0.2 is unknown: ") || !strings.Contains(l, "VictoriaLogs at http://127.0.0.1:9") {
				t.Errorf("a failed QP's line without what the store said of its peer: %q", l)
			}
			named++
		} else if strings.Contains(l, "its peer") {
			t.Errorf("a line not of a QP names a peer: %q", l)
		}
	}
	if named == 0 || code != 0 {
		t.Errorf("exit %d, %d QP lines:\n%s%s", code, named, out, stderr)
	}
	_, stderr, code = rdmatrace(t, "why", "-r", "x", "--node", "node-a")
	if code != 2 || !strings.Contains(stderr, "it goes with --store URL") {
		t.Errorf("--node without --store: exit %d, %q", code, stderr)
	}
}
