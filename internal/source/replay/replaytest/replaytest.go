// Package replaytest reads a recording's events for tests of what
// consumes them (top, the exporter, the failure rules, the views).
package replaytest

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// Events is every event of the recording at path, in its order; a line
// that does not decode fails the test.
func Events(t testing.TB, path string) []rdma.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := replay.NewReader(f, path)
	var evs []rdma.Event
	for {
		var e rdma.Event
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}
