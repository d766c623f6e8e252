package formats

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// TestEventJSONIsTheObjectsJSON: trace -j's line, written as the fields
// come, is byte for byte the JSON of the event's Object, for every event
// of every recording under testdata (each kind the tests know).
func TestEventJSONIsTheObjectsJSON(t *testing.T) {
	kinds := map[rdma.EventKind]bool{}
	n := 0
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".ndjson") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r := replay.NewReader(f, path)
		for {
			var e rdma.Event
			err := r.Next(&e)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				continue // the bad lines of the readers' tests
			}
			want := AppendJSON(nil, EventObject(&e))
			if got := AppendEventJSON(nil, &e); !bytes.Equal(got, want) {
				t.Fatalf("%s: an event's line\n%s\nwant (its Object's)\n%s", path, got, want)
			}
			kinds[e.Kind] = true
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 300 || len(kinds) < 20 {
		t.Fatalf("compared %d events of %d kinds: the recordings are not where they were", n, len(kinds))
	}
	t.Logf("%d events of %d kinds", n, len(kinds))
}

type failingWriter struct{ writes int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errors.New("no space left on device")
}

// TestEventWriterKeepsItsWriteError: once a write failed (a full disk, a
// closed pipe), every later Write and Flush says so, as bufio's did: a
// flush whose error its caller dropped (trace's flush when the ring is
// empty) does not let the next events be taken as written.
func TestEventWriterKeepsItsWriteError(t *testing.T) {
	f := &failingWriter{}
	w := NewEventWriter(f, true)
	e := rdma.Event{Kind: rdma.EvCreate}
	if err := w.Write(&e); err != nil {
		t.Fatalf("a buffered write: %v", err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("the flush of a failing writer said nothing")
	}
	if err := w.Write(&e); err == nil {
		t.Error("a write after the failed flush said nothing")
	}
	if err := w.Flush(); err == nil || f.writes != 1 {
		t.Errorf("flush again: %v after %d writes, want the first error and 1 write", err, f.writes)
	}
}
