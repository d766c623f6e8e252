package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Why a program did not load, as the user acts on it. The verifier
// answers most rejections with EACCES, the errno of a missing capability
// too: a rejection is told by the verifier's log, not by the errno.
type loadFailure uint8

const (
	failOther      loadFailure = iota
	failRejected               // the kernel's verifier rejected the program: rdmatrace's bug
	failPrivileges             // EPERM/EACCES without a verifier log: a missing capability
	failMissing                // the kernel lacks the function, tracepoint, type or feature
)

// classifyLoad says which kind of failure err is.
func classifyLoad(err error) loadFailure {
	var ve *ebpf.VerifierError
	switch {
	case errors.As(err, &ve) && badRelocation(ve):
		return failMissing
	case errors.As(err, &ve) && len(ve.Log) > 0:
		return failRejected
	case errors.Is(err, os.ErrPermission):
		return failPrivileges
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, btf.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return failMissing
	}
	return failOther
}

// badRelocation: the verifier refused an instruction that cilium/ebpf
// put in place of a read whose structure or field is in no BTF it was
// given (a CO-RE relocation that failed): the kernel lacks it, or its
// module's BTF is missing, which is not a bug of the program's.
func badRelocation(ve *ebpf.VerifierError) bool {
	if c := ve.Cause; c != nil && (c.Error() == "bad CO-RE relocation" || c.Error() == "unknown kfunc") {
		return true
	}
	call := fmt.Sprintf("unknown#%d", btf.COREBadRelocationSentinel)
	load := fmt.Sprintf("= 0x%x", btf.COREBadRelocationSentinel)
	for _, l := range ve.Log {
		if strings.Contains(l, call) || strings.Contains(l, load) {
			return true
		}
	}
	return false
}

// Rejection is a program the kernel's verifier refused: a bug of
// rdmatrace's on this kernel, to be reported with the verifier's words.
type Rejection struct {
	Hook, Variant, Prog string
	// Log is the verifier log's last lines (at most rejectionLines).
	Log []string
}

// rejectionLines is how much of the verifier's log a rejection keeps: its
// conclusion and the instructions that led to it.
const rejectionLines = 12

func newRejection(hook, variant, prog string, err error) *Rejection {
	var ve *ebpf.VerifierError
	if classifyLoad(err) != failRejected || !errors.As(err, &ve) {
		return nil
	}
	log := withoutCount(ve.Log)
	if len(log) > rejectionLines {
		log = log[len(log)-rejectionLines:]
	}
	return &Rejection{Hook: hook, Variant: variant, Prog: prog, Log: append([]string(nil), log...)}
}

// loadReason is one variant's failure as the attach report says it.
func loadReason(err error) string {
	switch classifyLoad(err) {
	case failRejected:
		var ve *ebpf.VerifierError
		errors.As(err, &ve)
		return "rejected by the kernel's verifier: " + conclusion(ve.Log)
	case failPrivileges:
		return ErrPrivileges.Error() + " (" + shortError(err) + ")"
	case failMissing:
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return "not in this kernel: a structure or field it reads is in none of the kernel's or modules' BTF (a module without BTF can be given it with --btf)"
		}
		return "not in this kernel: " + shortError(err)
	}
	return shortError(err)
}

// Conclusion is the verifier's last word on the program.
func (r *Rejection) Conclusion() string { return conclusion(r.Log) }

// conclusion is a verifier log's last line but the count of instructions
// processed.
func conclusion(log []string) string {
	log = withoutCount(log)
	if len(log) == 0 {
		return "no log"
	}
	return strings.TrimSpace(log[len(log)-1])
}

// withoutCount is a verifier log without its last line when that is the
// count of instructions processed.
func withoutCount(log []string) []string {
	if n := len(log); n > 0 && strings.HasPrefix(log[n-1], "processed ") {
		return log[:n-1]
	}
	return log
}

// kernelRelease is the running kernel's release, for a report of a bug.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// osRelease is kernelRelease; tests set their own.
var osRelease = kernelRelease

// NoBPF says why BPF tracing cannot run here, in the preflight's words,
// when netlink can stand in for it: no privileges for BPF, no BTF of the
// kernel or of ib_core (and none given with --btf). "" when BPF can be
// tried, or when what is missing (no RDMA stack) leaves netlink nothing
// to show either. A denial found only when loading (seccomp, an LSM, a
// sysctl) is BPFDenied's.
func NoBPF(given *KernelBTF) string { return noBPF(os.DirFS("/"), given) }

func noBPF(root fs.FS, given *KernelBTF) string {
	for _, p := range preflight(root, given) {
		if p.Fatal && (p.Msg == ErrPrivileges.Error() || strings.Contains(p.Msg, "BTF")) {
			return p.Msg
		}
	}
	return ""
}

// BPFDenied says whether a session's error is the kernel refusing BPF
// (EPERM or EACCES creating a map or loading every program): where
// seccomp, an LSM or kernel.unprivileged_bpf_disabled forbids it though
// the capabilities are there.
func BPFDenied(err error) bool { return errors.Is(err, ErrPrivileges) }
