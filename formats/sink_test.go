package formats

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestOneOutputParserNamesTheValidFormats(t *testing.T) {
	valid := []Format{FormatTable, FormatJSON, FormatNDJSON}
	for _, c := range []struct {
		name   string
		j      bool
		jsonIs Format
		want   Format
	}{
		{"table", false, FormatJSON, FormatTable},
		{"json", false, FormatNDJSON, FormatJSON}, // -o json is an array, a stream's too
		{"table", true, FormatJSON, FormatJSON},   // a snapshot's -j
		{"table", true, FormatNDJSON, FormatNDJSON},
	} {
		if got, err := ParseFormat(c.name, c.j, c.jsonIs, valid...); err != nil || got != c.want {
			t.Errorf("ParseFormat(%q, -j %v) = %q, %v; want %q", c.name, c.j, got, err, c.want)
		}
	}
	_, err := ParseFormat("xml", false, FormatJSON, valid...)
	if err == nil || err.Error() != `unknown output format "xml": valid formats are table, json, ndjson` {
		t.Errorf("ParseFormat(xml) = %v", err)
	}
}

// Events in -o json are one array, valid JSON once closed; in ndjson
// (trace -j) one object a line.
func TestEventSinksWriteAnArrayOrLines(t *testing.T) {
	ev := &rdma.Event{Kind: rdma.EvCreate, Time: time.Unix(1, 0).UTC()}
	for _, c := range []struct {
		f     Format
		check func(string) bool
	}{
		{FormatJSON, func(s string) bool {
			var a []map[string]any
			return json.Unmarshal([]byte(s), &a) == nil && len(a) == 2
		}},
		{FormatNDJSON, func(s string) bool { return strings.Count(s, "\n") == 2 && strings.HasPrefix(s, "{") }},
	} {
		var b bytes.Buffer
		s := NewEventSink(&b, c.f, StampAbsolute)
		for i := 0; i < 2; i++ {
			if err := s.Write(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil || !c.check(b.String()) {
			t.Errorf("%s: %q, %v", c.f, b.String(), err)
		}
	}
	var b bytes.Buffer
	if err := NewEventSink(&b, FormatJSON, StampAbsolute).Close(); err != nil || b.String() != "[]\n" {
		t.Errorf("no event in -o json: %q, %v; want []", b.String(), err)
	}
}
