//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// siteFinding is what a leaks -j finding says of its call site.
type siteFinding struct {
	Res   string `json:"res"`
	Via   string `json:"via"`
	Stack []struct {
		Func    string `json:"func"`
		File    string `json:"file"`
		Line    int    `json:"line"`
		Binary  string `json:"binary"`
		Offset  uint64 `json:"offset"`
		BuildID string `json:"build-id"`
	} `json:"stack"`
}

// siteLines are the lines of leaksites.c marked "SITE name".
func siteLines(t *testing.T) map[string]int {
	t.Helper()
	var b []byte
	var err error
	for _, p := range []string{"guest/workloads/leaksites.c", "../guest/workloads/leaksites.c"} {
		if b, err = os.ReadFile(p); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("leaksites' source: %v", err)
	}
	out := map[string]int{}
	for i, l := range strings.Split(string(b), "\n") {
		if _, name, ok := strings.Cut(l, "/* SITE "); ok {
			out[strings.TrimSuffix(strings.TrimSpace(name), " */")] = i + 1
		}
	}
	return out
}

// needUprobes skips where the kernel has no uprobes.
func needUprobes(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		t.Skipf("kernel %s has no uprobes (CONFIG_UPROBE_EVENTS): leaks cannot name call sites", release(t))
	}
}

// TestLeaksNameTheCallSiteOfEachLeak: leaks -- CMD names where in the
// program each leaked object was created: two QPs from a helper, a CQ
// from main and an rdma_cm ID through librdmacm, each by function and
// line, with the library function called and the callers above it; the
// human report sums them up by call site. The same program stripped is
// named by binary+offset and its build-id, the same as the unstripped
// one's.
func TestLeaksNameTheCallSiteOfEachLeak(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	needUprobes(t)
	lines := siteLines(t)
	prog := filepath.Join(*workloads, "leaksites")
	want := map[string]struct {
		fn, via string
		n       int
	}{"qp": {"setup_conn", "ibv_create_qp", 2}, "cq": {"main", "ibv_create_cq", 1}, "cm_id": {"make_id", "rdma_create_id", 1}}

	sites := func(bin string) (map[string][]siteFinding, string) {
		fs, code, log := runLeaks(t, bin, device, addr)
		if code != 3 {
			t.Errorf("leaks -- %s: exit status %d, want 3\n%s", bin, code, log)
		}
		got := map[string][]siteFinding{}
		for _, f := range fs {
			if f.Report != "exit-cleanup" {
				continue
			}
			var s siteFinding
			if err := json.Unmarshal([]byte(f.line), &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Stack) > 0 && filepath.Base(s.Stack[0].Binary) == filepath.Base(bin) {
				got[s.Res] = append(got[s.Res], s)
			}
		}
		return got, log
	}

	full, log := sites(prog)
	for res, w := range want {
		fs := full[res]
		if len(fs) != w.n {
			t.Errorf("%s: %d leaks named at a call site in leaksites, want %d\n%s", res, len(fs), w.n, log)
			continue
		}
		for _, f := range fs {
			site := f.Stack[0]
			if site.Func != w.fn || filepath.Base(site.File) != "leaksites.c" || site.Line != lines[w.fn] || f.Via != w.via || site.BuildID == "" {
				t.Errorf("%s: created at %s (%s:%d) via %s, build-id %q; want %s (leaksites.c:%d) via %s, a build-id; leaks said:\n%s",
					res, site.Func, site.File, site.Line, f.Via, site.BuildID, w.fn, lines[w.fn], w.via, log)
			}
			if w.fn != "main" && (len(f.Stack) < 2 || f.Stack[1].Func != "main") {
				t.Errorf("%s: frames %+v, want main above %s", res, f.Stack, w.fn)
			}
		}
	}

	// The human report, as the docs show it.
	out, stderr, _ := runStatus(*rdmatraceBin, "leaks", "--", prog, device, addr)
	t.Logf("rdmatrace leaks -- %s %s %s:\n%s%s", prog, device, addr, out, stderr)
	for _, l := range []string{
		fmt.Sprintf("2 QPs created at setup_conn (leaksites.c:%d) via ibv_create_qp were never destroyed", lines["setup_conn"]),
		fmt.Sprintf("1 CQ created at main (leaksites.c:%d) via ibv_create_cq was never destroyed", lines["main"]),
		fmt.Sprintf("1 CM_ID created at make_id (leaksites.c:%d) via rdma_create_id was never destroyed", lines["make_id"]),
	} {
		if !strings.Contains(string(out), l+"\n") {
			t.Errorf("the report has no line %q", l)
		}
	}

	bare, log := sites(prog + "-stripped")
	for res := range want {
		if len(bare[res]) == 0 || len(full[res]) == 0 {
			t.Errorf("%s: stripped, %d leaks named at a call site in leaksites-stripped, want some\n%s", res, len(bare[res]), log)
			continue
		}
		b, f := bare[res][0].Stack[0], full[res][0].Stack[0]
		if b.Func != "" || b.File != "" || b.BuildID != f.BuildID || b.Offset != f.Offset {
			t.Errorf("%s: stripped, created at %+v; want no names, offset 0x%x and build-id %s", res, b, f.Offset, f.BuildID)
		}
	}
}
