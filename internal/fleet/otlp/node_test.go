package otlp

import (
	"net/http/httptest"
	"testing"
)

// A Node without identity records sends the events it is written and,
// at Close, what was queued: trace --otlp without a live node's records
// (a recording read back).
func TestNodeSendsItsEventsByClose(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n, err := StartNode(srv.URL, "node-a", false)
	if err != nil {
		t.Fatal(err)
	}
	if n.Sink.Node() != "node-a" {
		t.Errorf("node %q, want node-a", n.Sink.Node())
	}
	evs := events()
	for i := range evs {
		n.Write(&evs[i])
	}
	n.Close()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.records) != len(evs) {
		t.Errorf("the receiver got %d records, want %d", len(rc.records), len(evs))
	}
	if _, err := StartNode("ftp://x", "", false); err == nil {
		t.Error("an ftp:// collector was taken")
	}
}
