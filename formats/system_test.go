package formats

import (
	"bytes"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestSystemGolden(t *testing.T) {
	on, off := true, false
	var out bytes.Buffer
	for _, s := range []rdma.System{
		{NetNSMode: "shared", CopyOnFork: &on},                                        // 6.1
		{NetNSMode: "exclusive", CopyOnFork: &on, PrivilegedQKey: &off, Monitor: &on}, // 6.12
		{},
	} {
		out.WriteString(SystemText(&s))
		nd := NewNDJSONWriter(&out)
		if err := nd.Write(SystemObject(&s)); err != nil {
			t.Fatal(err)
		}
		if err := nd.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, "../testdata/formats/system.golden", out.Bytes())
}
