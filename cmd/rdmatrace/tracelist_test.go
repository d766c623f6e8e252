package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// trace -l's table and NDJSON, from every kind of verdict.
func TestTraceListGolden(t *testing.T) {
	ls := []tracer.Listed{
		{Hook: "rdma_restrack_add", Variant: "fexit", Probes: []string{"fexit:rdma_restrack_add"}, Present: true, Where: "ib_core"},
		{Hook: "rdma_restrack_add", Variant: "kprobe+kretprobe", Probes: []string{"kprobe:rdma_restrack_add", "kretprobe:rdma_restrack_add"}, Why: "this kernel has no kprobes"},
		{Hook: "rdma_create_user_id", Variant: "fexit", Probes: []string{"fexit:rdma_create_user_id"}, Unknown: true, Why: "not in BTF of vmlinux or a loaded module (rdma_cm not loaded)"},
		{Hook: "smc:smcr_link_down", Variant: "tp_btf", Probes: []string{"tp_btf:smcr_link_down"}, Unknown: true, Module: "smc", Why: "module smc not loaded: cannot check"},
		{Hook: "sched:sched_switch", Variant: "tp_btf", Probes: []string{"tp_btf:sched_switch"}, Present: true, Where: "vmlinux", Followed: true},
		{Hook: "evil\x1b[31m", Variant: "fexit", Probes: []string{"fexit:x"}, Why: "not in this kernel's BTF"},
	}
	var out bytes.Buffer
	if err := listedTable(ls).Render(&out); err != nil {
		t.Fatal(err)
	}
	nd := formats.NewNDJSONWriter(&out)
	for i := range ls {
		if err := nd.Write(listedObject(&ls[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "testdata", "cli", "trace-list.txt"), out.Bytes())
}

// trace -l runs without root and lists what this kernel has (failed
// before: -l was an unknown flag).
func TestTraceListRunsAsNobody(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("no kernel BTF here")
	}
	setpriv, bin, _ := asNobody(t)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "trace", "-l", "__inet_bind")
	cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !regexp.MustCompile(`(?m)^__inet_bind +fexit +fexit:__inet_bind +yes +in vmlinux$`).MatchString(stdout.String()) {
		t.Errorf("trace -l __inet_bind as nobody: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}
