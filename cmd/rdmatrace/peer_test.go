package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// peerStore serves the answers a real VictoriaLogs gave to the peer
// package's questions (internal/fleet/peer/testdata).
func peerStore(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../internal/fleet/peer/testdata/victorialogs.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Answers map[string]string }
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ans, ok := rec.Answers[r.Form.Get("limit")+" "+r.Form.Get("query")]
		if !ok {
			http.Error(w, "not recorded", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, ans)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// peer answers from the store, says which lifetime of a reused QPN it
// gives, and fails (1) when the store has nothing, saying what was missing.
func TestPeerAsksTheStore(t *testing.T) {
	url := peerStore(t)
	out, stderr, code := rdmatrace(t, "peer", "--store", url, "--at", "2026-12-01T05:00:03Z", "10.98.1.2", "0x11", "-j")
	var a map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a["comm"] != "ib_write_bw" || a["which"] != "at" || a["signal"] != "SIGKILL" || a["node"] != "node-b" {
		t.Errorf("peer --at during the first lifetime: status %d\n%s%s", code, out, stderr)
	}
	out, _, code = rdmatrace(t, "peer", "--store", url, "10.98.1.2", "17")
	if code != 0 || !strings.Contains(out, "rping[1000]") || !strings.Contains(out, "the live one (2 lifetimes") {
		t.Errorf("peer without --at: status %d\n%s", code, out)
	}
	out, _, code = rdmatrace(t, "peer", "--store", url, "10.98.9.9", "17")
	if code != 1 || !strings.Contains(out, "no node reported GID ::ffff:10.98.9.9") {
		t.Errorf("peer of an unknown GID: status %d\n%s", code, out)
	}
}

func TestPeerSaysWhatIsWrongWithItsArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"peer", "10.0.0.2", "17"}, "the log store's base URL is needed", 2},
		{[]string{"peer", "--store", "http://127.0.0.1:9", "10.0.0.2"}, "expected ADDR|GID QPN", 2},
		{[]string{"peer", "--store", "http://127.0.0.1:9", "node-b", "17"}, "expected an IP address", 2},
		{[]string{"peer", "--store", "http://127.0.0.1:9", "10.0.0.2", "0x1000000"}, "expected a QP number", 2},
		{[]string{"peer", "--store", "http://127.0.0.1:9", "--at", "yesterday", "10.0.0.2", "17"}, "expected a time", 2},
		{[]string{"peer", "--store", "127.0.0.1:9428", "10.0.0.2", "17"}, "expected the store's base URL", 2},
		{[]string{"peer", "--store", "http://127.0.0.1:9", "--timeout", "2s", "10.0.0.2", "17"}, "VictoriaLogs at http://127.0.0.1:9", 1},
	} {
		_, stderr, code := rdmatrace(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: status %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
