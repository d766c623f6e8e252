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
		s := NewEventSink(&b, c.f, EventView{})
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
	if err := NewEventSink(&b, FormatJSON, EventView{}).Close(); err != nil || b.String() != "[]\n" {
		t.Errorf("no event in -o json: %q, %v; want []", b.String(), err)
	}
}

// res -p writes the indented array itself, as rdma -p -j indents (Go's
// json.Indent with four spaces gives the same bytes): nothing is written
// compact and parsed again.
func TestPrettyArrayIsIndentedAsRdmaPJ(t *testing.T) {
	objs := [][]Object{
		nil,
		{{}},
		{
			Object{}.num("ifindex", 1).str("ifname", "rx\x1be\"0").hex("rkey", 0xabc).boolean("adaptive-moderation", true),
			append(Object{}.list("lqpn", []string{"1-3", "7"}).list("withheld", nil),
				Field{Key: "qps", Kind: NumList, List: []string{"17", "18"}}, Field{Key: "status", Kind: Int, Num: uint64(1<<64 - 98)},
				Field{Key: "dur-us", Kind: Micros, Num: 12345}, timeField("time", time.Unix(1, 5).UTC())),
		},
	}
	for i, os := range objs {
		var compact, pretty bytes.Buffer
		c, p := NewObjectSink(&compact, FormatJSON, false, Objects), NewObjectSink(&pretty, FormatJSON, true, Objects)
		for _, o := range os {
			if err := c.Write(o); err != nil {
				t.Fatal(err)
			}
			if err := p.Write(o); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "    "); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if pretty.String() != want.String() {
			t.Errorf("case %d:\n%s\nwant\n%s", i, pretty.String(), want.String())
		}
	}
}

// The indented array streams like the compact one: what Flush is given
// is out before Close (it used to be held back to be indented at the end).
func TestPrettyArrayStreams(t *testing.T) {
	var out bytes.Buffer
	s := NewObjectSink(&out, FormatJSON, true, Objects)
	if err := s.Write(Object{}.num("ifindex", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "[\n    {\n        \"ifindex\": 1\n    }"; out.String() != want {
		t.Errorf("after Flush: %q, want %q", out.String(), want)
	}
}
