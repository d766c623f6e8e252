package tracer

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// lineOf is the line of src that holds marker.
func lineOf(t *testing.T, src, marker string) int {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("%s has no %s", src, marker)
	return 0
}

// buildCallsiteProgram compiles testdata/callsite: libfakeverbs.so (an
// ibv_create_qp of its own) and prog, built as the docs ask (-g
// -fno-omit-frame-pointer), and prog stripped.
func buildCallsiteProgram(t *testing.T) (lib, prog, stripped string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("the call-site test builds a C program: no cc (apt-get install gcc)")
	}
	dir := t.TempDir()
	src, _ := filepath.Abs("testdata/callsite")
	lib, prog, stripped = filepath.Join(dir, "libfakeverbs.so"), filepath.Join(dir, "prog"), filepath.Join(dir, "prog-stripped")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(cc, "-shared", "-fPIC", "-O1", "-o", lib, filepath.Join(src, "fakeverbs.c"))
	run(cc, "-g", "-O0", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o", prog, filepath.Join(src, "prog.c"), "-L"+dir, "-lfakeverbs", "-Wl,-rpath,"+dir)
	run("objcopy", "--strip-all", prog, stripped)
	return lib, prog, stripped
}

// openCallSitesOrSkip loads the call-site probes on lib, or skips where
// this machine cannot (not root, no uprobes).
func openCallSitesOrSkip(t *testing.T, lib string) *CallSites {
	t.Helper()
	c := openCallSitesOrSkipB(t, lib)
	t.Cleanup(c.Close)
	return c
}

func openCallSitesOrSkipB(t testing.TB, lib string) *CallSites {
	t.Helper()
	return openCallSitesWith(t, CallSiteOptions{Libraries: []string{lib}, NoDefault: true})
}

func openCallSitesWith(t testing.TB, o CallSiteOptions) *CallSites {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("uprobes need root")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCallSites(o)
	if errors.Is(err, ErrPrivileges) {
		t.Skip(err)
	}
	if err != nil {
		if _, serr := os.Stat("/sys/bus/event_source/devices/uprobe"); serr != nil {
			t.Skipf("this kernel has no uprobes (CONFIG_UPROBE_EVENTS): %v", err)
		}
		t.Fatal(err)
	}
	return c
}

// runProgram runs prog until it has made its two calls, and returns, for
// each, the event the kernel would have made of it: a create by that
// thread at that time. The program runs until the test ends (it waits for
// its stdin to close).
func runProgram(t *testing.T, prog string) []rdma.Event {
	t.Helper()
	cmd := exec.Command(prog)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	var evs []rdma.Event
	for len(evs) < 2 && sc.Scan() {
		f := strings.Fields(sc.Text())
		tid, _ := strconv.ParseUint(f[0], 10, 32)
		mono, _ := strconv.ParseUint(f[1], 10, 64)
		evs = append(evs, rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvUser | rdma.EvHasRes, Resource: rdma.Resource{Type: rdma.ResQP},
			Actor: rdma.Owner{PID: uint32(cmd.Process.Pid), TID: uint32(tid)}, Mono: mono})
	}
	if len(evs) != 2 {
		t.Fatalf("the program said %d calls, want 2", len(evs))
	}
	return evs
}

// With frame pointers and DWARF, each create is named by its call site,
// function and line (a helper's, then main's), the caller above it, and
// the function that was called.
func TestCallSitesNameTheFunctionAndLineOfEachCreate(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "with the kernel's mappings", true: "without bpf_find_vma"}[plain], func(t *testing.T) {
			namesEachCreate(t, plain)
		})
	}
}

func namesEachCreate(t *testing.T, plain bool) {
	lib, prog, _ := buildCallsiteProgram(t)
	c := openCallSitesWith(t, CallSiteOptions{Libraries: []string{lib}, NoDefault: true, plain: plain})
	t.Cleanup(c.Close)
	evs := runProgram(t, prog)
	src := "testdata/callsite/prog.c"
	for i := range evs {
		c.Annotate(&evs[i])
	}
	want := []struct {
		funcs []string
		line  int
	}{
		{[]string{"setup_conn", "main"}, lineOf(t, src, "SETUP_CONN_LINE")},
		{[]string{"main"}, lineOf(t, src, "MAIN_LINE")},
	}
	for i, w := range want {
		st := evs[i].Stack
		if st == nil {
			t.Fatalf("create %d has no stack", i)
		}
		if st.Via != "ibv_create_qp" {
			t.Errorf("create %d: via %q, want ibv_create_qp", i, st.Via)
		}
		site := st.Site()
		if site.Func != w.funcs[0] || filepath.Base(site.File) != "prog.c" || site.Line != w.line {
			t.Errorf("create %d: call site %s, want %s (prog.c:%d)", i, site, w.funcs[0], w.line)
		}
		if len(st.Frames) < len(w.funcs) {
			t.Fatalf("create %d: frames %v (%s), want at least %v", i, st.Frames, st.Partial, w.funcs)
		}
		for j, fn := range w.funcs {
			if st.Frames[j].Func != fn {
				t.Errorf("create %d: frame %d is %s, want %s (stack %v)", i, j, st.Frames[j], fn, st.Frames)
			}
		}
		if site.BuildID == "" || site.Binary != prog {
			t.Errorf("create %d: binary %q build-id %q, want %s and its build-id", i, site.Binary, site.BuildID, prog)
		}
	}
}

// A stripped program is named by binary+offset and its build-id, which
// are the unstripped one's: it can be symbolized later.
func TestCallSitesOfAStrippedProgramAreOffsetsWithTheBuildID(t *testing.T) {
	lib, prog, stripped := buildCallsiteProgram(t)
	c := openCallSitesOrSkip(t, lib)
	full := runProgram(t, prog)
	bare := runProgram(t, stripped)
	for i := range full {
		c.Annotate(&full[i])
		c.Annotate(&bare[i])
		if full[i].Stack == nil || bare[i].Stack == nil {
			t.Fatalf("create %d: stacks %v and %v", i, full[i].Stack, bare[i].Stack)
		}
		f, b := full[i].Stack.Site(), bare[i].Stack.Site()
		if b.Func != "" || b.File != "" || b.Binary != stripped || b.BuildID != f.BuildID || b.Offset != f.Offset {
			t.Errorf("create %d: stripped site %+v, want %s+0x%x with build-id %s and no names", i, b, stripped, f.Offset, f.BuildID)
		}
		if s := b.String(); !strings.Contains(s, "prog-stripped+0x") || !strings.Contains(s, f.BuildID) {
			t.Errorf("create %d: stripped site says %q", i, s)
		}
	}
}

// A create outside every probed call (another thread, or a time no call
// was under way) gets no stack.
func TestACreateOutsideTheProbedCallsHasNoStack(t *testing.T) {
	lib, prog, _ := buildCallsiteProgram(t)
	c := openCallSitesOrSkip(t, lib)
	evs := runProgram(t, prog)
	c.Annotate(&evs[0]) // the reader has caught up
	other := evs[1]
	other.Actor.TID++
	late := evs[1]
	late.Mono += 1 << 40
	for _, e := range []*rdma.Event{&other, &late} {
		if c.Annotate(e); e.Stack != nil {
			t.Errorf("tid %d at %d: stack %v, want none", e.Actor.TID, e.Mono, e.Stack.Frames)
		}
	}
}

// A program whose memory map cannot be read any more (it has exited; here,
// a /proc without it) is named from what the kernel said of each address
// at the call (bpf_find_vma): the file's inode and name, found among the
// programs started.
func TestCallSitesOfAProgramGoneAreNamedFromTheKernelsMappings(t *testing.T) {
	lib, prog, _ := buildCallsiteProgram(t)
	c := openCallSitesWith(t, CallSiteOptions{Libraries: []string{lib}, NoDefault: true, ProcRoot: t.TempDir()})
	t.Cleanup(c.Close)
	if !strings.Contains(c.enter.String(), "vma") {
		t.Skipf("this kernel has no bpf_find_vma (Linux 5.17): %s", c.enter)
	}
	c.AddProgram(prog)
	evs := runProgram(t, prog)
	c.Annotate(&evs[0])
	st := evs[0].Stack
	if st == nil || len(st.Frames) < 2 {
		t.Fatalf("stack %+v, want setup_conn and main", st)
	}
	if f := st.Frames[0]; f.Func != "setup_conn" || f.Line != lineOf(t, "testdata/callsite/prog.c", "SETUP_CONN_LINE") || f.Binary != prog {
		t.Errorf("call site %+v, want setup_conn in %s", f, prog)
	}
	if f := st.Frames[1]; f.Func != "main" {
		t.Errorf("caller %+v, want main", f)
	}
	if st.Via != "ibv_create_qp" {
		t.Errorf("via %q, want ibv_create_qp", st.Via)
	}
}

// The call-site object's programs pass this machine's verifier with their
// CO-RE relocations resolved against Debian 6.1's kernel types (the
// oldest kernel with bpf_find_vma that the guest tests run): the fields
// callsite_enter_vma reads exist there.
func TestCallSiteProgramsLoadAgainstDebian61Types(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := bpf.LoadCallsite()
	if err != nil {
		t.Fatal(err)
	}
	base := loadGzBTF(t, "../testdata/btf/6.1/vmlinux.btf.gz", nil)
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: base}})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	for _, p := range []string{"callsite_enter", "callsite_enter_vma", "callsite_exit"} {
		if coll.Programs[p] == nil {
			t.Errorf("no program %s", p)
		}
	}
}
