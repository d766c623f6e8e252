package hookview

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/trace"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// trace -l's table and NDJSON, from every kind of verdict.
func TestListGolden(t *testing.T) {
	ls := []trace.Hook{
		{Hook: "rdma_restrack_add", Variant: "fexit", Probes: []string{"fexit:rdma_restrack_add"}, Present: true, Where: "ib_core"},
		{Hook: "rdma_restrack_add", Variant: "kprobe+kretprobe", Probes: []string{"kprobe:rdma_restrack_add", "kretprobe:rdma_restrack_add"}, Why: "this kernel has no kprobes"},
		{Hook: "rdma_create_user_id", Variant: "fexit", Probes: []string{"fexit:rdma_create_user_id"}, Unknown: true, Why: "not in BTF of vmlinux or a loaded module (rdma_cm not loaded)"},
		{Hook: "smc:smcr_link_down", Variant: "tp_btf", Probes: []string{"tp_btf:smcr_link_down"}, Unknown: true, Module: "smc", Why: "module smc not loaded: cannot check"},
		{Hook: "sched:sched_switch", Variant: "tp_btf", Probes: []string{"tp_btf:sched_switch"}, Present: true, Where: "vmlinux", Followed: true},
		{Hook: "evil\x1b[31m", Variant: "fexit", Probes: []string{"fexit:x"}, Why: "not in this kernel's BTF"},
	}
	var out bytes.Buffer
	if err := Table(ls).Render(&out); err != nil {
		t.Fatal(err)
	}
	nd := formats.NewNDJSONWriter(&out)
	for i := range ls {
		if err := nd.Write(Object(&ls[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "cli", "trace-list.txt"), out.Bytes())
}
