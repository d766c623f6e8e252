package formats

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The screen, -w - and -w FILE --print each get their part of the sink.
func TestEventOutputOpensWhatItSays(t *testing.T) {
	for _, c := range []struct {
		o             EventOutput
		print, record bool
	}{
		{EventOutput{Format: FormatNDJSON}, true, false},
		{EventOutput{Format: FormatNDJSON, Write: "-"}, false, true},
		{EventOutput{Format: FormatNDJSON, Write: "rec"}, false, false},
		{EventOutput{Format: FormatNDJSON, Write: "rec", Print: true}, true, false},
	} {
		var out bytes.Buffer
		sink := c.o.Open(&out)
		if (sink.Print != nil) != c.print || (sink.Record != nil) != c.record {
			t.Errorf("%+v: print %v, record %v; want %v, %v", c.o, sink.Print != nil, sink.Record != nil, c.print, c.record)
		}
		e := &rdma.Event{Kind: rdma.EvCreate}
		if err := sink.Write(e); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(sink.Flush(), sink.Close()); err != nil {
			t.Fatal(err)
		}
		if want := c.print || c.record; (out.Len() > 0) != want {
			t.Errorf("%+v: stdout holds %q", c.o, out.String())
		}
	}
}

// -w FILE refuses a symbolic link planted at its name (and names it), and
// is 0600 otherwise.
func TestEventOutputRecordingRefusesPlantedLinks(t *testing.T) {
	t.Setenv("SUDO_UID", "")
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rec.ndjson")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	err := EventOutput{Write: link, FileCount: 1}.OpenRecording(&EventTee{})
	if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenRecording = %v, want a refusal naming %s", err, link)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's secret\n" {
		t.Errorf("written through the planted link: the victim holds %q", b)
	}
	p := filepath.Join(dir, "new.ndjson")
	sink := &EventTee{}
	if err := (EventOutput{Write: p, FileSizeMB: 1, FileCount: 3}).OpenRecording(sink); err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(&rdma.Event{Kind: rdma.EvCreate}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(sink.Flush(), sink.Close()); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o600 || st.Size() == 0 {
		t.Errorf("%s: mode %v, %d bytes; want -rw------- and the event", p, st.Mode(), st.Size())
	}
}
