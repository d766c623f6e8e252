package trace

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// trace's use case without a command line: an Options value and a sink.
// A recording read back keeps what the filter keeps, up to the count.
func TestTraceReadsARecordingIntoItsSink(t *testing.T) {
	rec := filepath.Join("..", "..", "..", "testdata", "leaklog", "6.12", "trace.ndjson")
	f, err := filter.ParseEvents([]string{"qp", "event", "create"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sink := &formats.EventTee{Print: formats.NewEventWriter(&out, true)}
	if err := Read(rec, 1<<30, 2, f, sink); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d events, want the count's 2:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `"event":"create"`) || !strings.Contains(l, `"res":"qp"`) {
			t.Errorf("the filter let through %s", l)
		}
	}
}

// Without BPF, what only BPF can do is refused before netlink is dialled:
// --bpf's no fallback and -- CMD are exit status 1, a --poll below
// netlink's shortest a usage error for the command to say.
func TestWithoutBPFRefusesWhatNeedsIt(t *testing.T) {
	f, err := filter.ParseEvents(nil)
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Filter: f, NoBPF: "--netlink asked for none", Netlink: NetlinkOptions{Poll: time.Second}}
	var sink bytes.Buffer
	out := &formats.EventTee{Print: formats.NewEventWriter(&sink, true)}

	o := base
	o.NoFallback = true
	var exit *tracer.ExitError
	if err := Run(o, out); !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(err.Error(), "--bpf: no fallback") {
		t.Errorf("--bpf without BPF: %v, want exit status 1 naming --bpf", err)
	}
	o = base
	o.Argv = []string{"true"}
	if err := Run(o, out); !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(err.Error(), "-- CMD, --follow-pid and --record-raw need it") {
		t.Errorf("-- CMD without BPF: %v, want exit status 1 saying it needs BPF", err)
	}
	o = base
	o.Netlink.Poll = 50 * time.Millisecond
	var usage *UsageError
	if err := Run(o, out); !errors.As(err, &usage) || !strings.Contains(err.Error(), "at least 100ms") {
		t.Errorf("--poll 50ms without BPF: %v, want a usage error", err)
	}
	if sink.Len() != 0 {
		t.Errorf("a refused run wrote %q", sink.String())
	}
}
