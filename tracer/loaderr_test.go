package tracer

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
)

// TestVerifierRejectionIsNotAPrivilegeProblem loads a program this host's
// verifier rejects (it reads a register nothing wrote) through the path
// every hook takes. The verifier answers EACCES, the errno of a missing
// capability: the report used to say "needs CAP_BPF ... run it as root"
// to root. It must say rejected, with the verifier's words, and keep the
// rejection for the bug report.
func TestVerifierRejectionIsNotAPrivilegeProblem(t *testing.T) {
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("BPF not available here: %v", err)
	}
	bad := &ebpf.ProgramSpec{
		Name: "bad", Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()},
	}
	tr := &Tracer{spec: &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{"bad": bad}}, cache: btf.NewCache()}
	h := Hook{Name: "test_hook", variants: []variant{{name: "socket", progs: []prog{{name: "bad", kind: rawTP, target: "none"}}}}}
	r := tr.attachHook(h, false, false)
	if r.Variant != "" {
		t.Fatalf("the rejected program attached: %+v", r)
	}
	if want := "socket: rejected by the kernel's verifier: R2 !read_ok"; r.Reason != want {
		t.Errorf("reason %q, want %q", r.Reason, want)
	}
	if r.denied {
		t.Error("a rejection counted as a missing privilege")
	}
	if len(r.Rejections) != 1 {
		t.Fatalf("rejections %+v, want one", r.Rejections)
	}
	rj := r.Rejections[0]
	if rj.Prog != "bad" || rj.Hook != "test_hook" || rj.Variant != "socket" || rj.Conclusion() != "R2 !read_ok" {
		t.Errorf("rejection %+v", rj)
	}
}

// TestLoadFailuresAreClassified: a verifier log decides a rejection; a
// bare EPERM or EACCES is a privilege; a function, type or feature the
// kernel lacks is said as such.
func TestLoadFailuresAreClassified(t *testing.T) {
	rejected := fmt.Errorf("program x: %w", &ebpf.VerifierError{Cause: syscall.EACCES, Log: []string{"0: (bf) r0 = r2", "R2 !read_ok", "processed 1 insns"}})
	for _, c := range []struct {
		err  error
		want loadFailure
		says string
	}{
		{rejected, failRejected, "rejected by the kernel's verifier: R2 !read_ok"},
		{fmt.Errorf("load program: %w", syscall.EPERM), failPrivileges, "needs CAP_BPF"},
		{fmt.Errorf("load program: %w", syscall.EACCES), failPrivileges, "needs CAP_BPF"},
		{&ebpf.VerifierError{Cause: syscall.EACCES}, failPrivileges, "needs CAP_BPF"}, // no log: nothing says the verifier refused it
		{fmt.Errorf("attach fentry: %w", ebpf.ErrNotSupported), failMissing, "not in this kernel: "},
		{fmt.Errorf("apply CO-RE relocations: %w", btf.ErrNotFound), failMissing, "not in this kernel: "},
		{errors.New("something else"), failOther, "something else"},
		// What cilium/ebpf puts in place of a read it could not relocate:
		// the verifier refuses it, but the program is not wrong.
		{&ebpf.VerifierError{Cause: syscall.EINVAL, Log: []string{"12: (85) call unknown#195896080", "invalid func unknown#195896080"}}, failMissing, "in none of the kernel's or modules' BTF"},
		{&ebpf.VerifierError{Cause: syscall.EACCES, Log: []string{"3: (18) r10 = 0xbad2310", "frame pointer is read only"}}, failMissing, "--btf"},
	} {
		if got := classifyLoad(c.err); got != c.want {
			t.Errorf("%v: class %d, want %d", c.err, got, c.want)
		}
		if got := loadReason(c.err); !strings.Contains(got, c.says) {
			t.Errorf("%v: reason %q lacks %q", c.err, got, c.says)
		}
	}
}

// What netlink can stand in for is named; what leaves it nothing to show
// (no RDMA stack) and a system BPF can run on are not.
func TestNoBPFNamesWhatNetlinkStandsInFor(t *testing.T) {
	file := &fstest.MapFile{}
	status := func(eff string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("CapEff:\t" + eff + "\n")}
	}
	debian := func() fstest.MapFS {
		return fstest.MapFS{"proc/self/status": status("000001ffffffffff"), "proc/modules": file,
			"sys/kernel/btf/vmlinux": file, "sys/kernel/btf/ib_core": file, "sys/kernel/btf/rdma_cm": file,
			"sys/module/ib_core/initstate": file, "sys/module/rdma_cm/initstate": file}
	}
	noCaps, noBTF, noRDMA := debian(), debian(), debian()
	noCaps["proc/self/status"] = status("0000000000000000")
	delete(noBTF, "sys/kernel/btf/ib_core")
	delete(noRDMA, "sys/module/ib_core/initstate")
	delete(noRDMA, "sys/module/rdma_cm/initstate")
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"BPF can run", debian(), ""},
		{"no capabilities", noCaps, "needs CAP_BPF and CAP_PERFMON"},
		{"ib_core without BTF", noBTF, "ib_core has no BTF"},
		{"no RDMA stack", noRDMA, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := noBPF(tc.fs, nil)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if !BPFDenied(fmt.Errorf("create map: %w", ErrPrivileges)) || BPFDenied(errors.New("no hook could be attached")) {
		t.Error("BPFDenied does not tell a denial")
	}
}
