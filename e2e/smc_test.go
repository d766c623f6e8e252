//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

const afSMC = 43

// smcPair connects an AF_SMC client to an AF_SMC server of the test's
// own on rxe0's address, with no pnet table and no UEID: SMC-Rv1 needs a
// RoCE v1 GID, which rxe does not have, and SMC-Rv2 a UEID, so both ends
// fall back to TCP. It returns the client's local port.
func smcPair(t *testing.T, port int) int {
	t.Helper()
	if fd, err := syscall.Socket(afSMC, syscall.SOCK_STREAM, 0); err != nil {
		t.Skipf("kernel %s: socket(AF_SMC): %v", release(t), err)
	} else {
		syscall.Close(fd)
	}
	cl, done := smcConnect(t, port)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	local, err := syscall.Getsockname(cl)
	if err != nil {
		t.Fatal(err)
	}
	return local.(*syscall.SockaddrInet4).Port
}

// TestSMCNamesFallbackAndReason: an SMC connection on rxe0 that falls back
// to TCP. smc lists the listener and both ends with the test's pid, the
// client's fallback reason (no SMC device) and the server's (the peer
// declined, with the peer's diagnosis); ports names their CLC sockets,
// which ss shows with no process, as the test's SMC sockets.
func TestSMCNamesFallbackAndReason(t *testing.T) {
	needDevice(t)
	// Loaded before the trace starts: its tracepoint hook is skipped
	// when smc is not there.
	loadSMC(t)
	var tr *tracing
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err == nil {
		tr = startTrace(t)
	}
	const port = 7500
	cport := smcPair(t, port)
	out, stderr, err := runStatus(*rdmatraceBin, "smc", "-j")
	if err != nil {
		t.Fatalf("rdmatrace smc -j: %v\n%s", err, stderr)
	}
	keep(t, "smc/smc.json", out)
	keep(t, "smc/smc.txt", run(t, *rdmatraceBin, "smc"))
	var socks []struct {
		PID            *uint32 `json:"pid"`
		State          string  `json:"state"`
		Mode           string  `json:"mode"`
		Src            string  `json:"src-addr"`
		Dst            string  `json:"dst-addr"`
		FallbackReason string  `json:"fallback-reason"`
		PeerDiagnosis  string  `json:"peer-diagnosis"`
	}
	if err := json.Unmarshal(out, &socks); err != nil {
		t.Fatalf("smc -j: %v\n%s", err, out)
	}
	me := fmt.Sprint(os.Getpid())
	client, server := fmt.Sprintf("10.99.0.1:%d", cport), fmt.Sprintf("10.99.0.1:%d", port)
	found := map[string]bool{}
	for _, s := range socks {
		if s.PID == nil || fmt.Sprint(*s.PID) != me {
			continue
		}
		switch {
		case s.State == "LISTEN" && s.Src == server:
			found["listener"] = true
		case s.Src == client && s.Dst == server:
			found["client"] = true
			if s.Mode != "TCP" || !strings.HasPrefix(s.FallbackReason, "0x03030000") {
				t.Errorf("client %+v: want mode TCP (fallback), reason 0x03030000 (no SMC device)", s)
			}
		case s.Src == server && s.Dst == client:
			found["server"] = true
			if s.Mode != "TCP" || !strings.HasPrefix(s.FallbackReason, "0x05000000") || !strings.HasPrefix(s.PeerDiagnosis, "0x03030000") {
				t.Errorf("server %+v: want mode TCP, reason 0x05000000 (peer declined), peer diagnosis 0x03030000", s)
			}
		}
	}
	if len(found) != 3 {
		t.Errorf("smc -j shows %v of the test's listener, client and server:\n%s", found, out)
	}
	if tr != nil {
		checkSMCFallbackEvents(t, tr, client, server)
	} else {
		t.Logf("kernel %s: no module BTF, the smc-fallback trace is not checked", release(t))
	}
	// The CLC sockets: ownerless in ss, the test's in ports.
	keep(t, "smc/ss.txt", run(t, "ss", "-tanp"))
	smcRows := 0
	for _, r := range portsJSON(t, "--port", fmt.Sprint(port)) {
		if r.Stack == "smc" {
			smcRows++
			if fmt.Sprint(r.PID) != me {
				t.Errorf("ports row %+v: want the test's pid %s", r, me)
			}
		}
	}
	if smcRows != 3 {
		t.Errorf("ports names %d CLC sockets on %d as SMC's, want the listener and both ends", smcRows, port)
	}
}

// checkSMCFallbackEvents: each side's fall back is one smc-fallback event
// with its CLC 4-tuple and reason; the client's names the test's process
// (it fell back in its connect), the server's falls back in a kworker
// before it is accepted.
func checkSMCFallbackEvents(t *testing.T, tr *tracing, client, server string) {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	evs := tr.stop()
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind != rdma.EvSMCFallback || !e.Given(rdma.HasSrcAddr) {
			continue
		}
		switch src, dst := e.Src.String(), e.Dst.String(); {
		case src == client && dst == server:
			seen["client"] = true
			if !strings.HasPrefix(e.FallbackReason, "0x03030000") || e.tid() != fmt.Sprint(os.Getpid()) && e.process() != fmt.Sprint(os.Getpid()) {
				t.Errorf("client's smc-fallback %v: want reason 0x03030000 and the test's pid", e)
			}
		case src == server && dst == client:
			seen["server"] = true
			if !strings.HasPrefix(e.FallbackReason, "0x05000000") {
				t.Errorf("server's smc-fallback %v: want reason 0x05000000 (peer declined)", e)
			}
		}
	}
	if !seen["client"] || !seen["server"] {
		t.Errorf("smc-fallback events seen for %v, want client and server; stderr:\n%s", seen, tr.stderr.String())
	}
}
