package main

import (
	"bytes"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// --netns: one JSON array whose objects name their namespace, and a
// section per namespace in the human views (an empty one left out).
func TestNetnsListingsGolden(t *testing.T) {
	devsIn := map[string][]rdma.Device{
		"self":     {{Index: 1, Name: "rxe0", NodeType: rdma.NodeType(1)}},
		"blue":     {{Index: 2, Name: "rxe1\x1b[31m", NodeType: rdma.NodeType(1)}},
		"pid 4000": nil,
	}
	names := []string{"self", "blue", "pid 4000"}
	var ls []listing
	for _, n := range names {
		devs := devsIn[n]
		objs := make([]formats.Object, len(devs))
		for i := range devs {
			objs[i] = formats.DeviceObject(&devs[i], false)
		}
		ls = append(ls, listing{objs: objs,
			text:  func(tw *formats.TextWriter, i int) error { return tw.Device(&devs[i], false) },
			table: func() *formats.Table { return formats.DeviceTable(devs) }})
	}
	var out bytes.Buffer
	for _, format := range []string{outTable, outText, outJSON, outNDJSON} {
		out.WriteString("--- " + format + "\n")
		if err := writeListings(&out, format, false, names, ls); err != nil {
			t.Fatal(err)
		}
	}
	goldenCLI(t, "netns-listings.txt", out.String())
	if bytes.Contains(out.Bytes(), []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
}

func TestSystemUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"system", "set"}, {"system", "set", "netns"}, {"system", "set", "netns", "private"},
		{"system", "show", "bogus"}, {"system", "-o", "table"},
	} {
		_, stderr, code := rdmatrace(t, args...)
		if code != 2 || stderr == "" {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want a usage error, exit 2", args, code, stderr)
		}
	}
}
