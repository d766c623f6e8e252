package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// The test binary doubles as rdmatrace when RDMATRACE_AS_MAIN is set, so
// tests can check real exit statuses and output streams.
func TestMain(m *testing.M) {
	if os.Getenv("RDMATRACE_AS_MAIN") == "1" {
		os.Args = append([]string{"rdmatrace"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func rdmatrace(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestWithoutRDMAOneLineAndFailure(t *testing.T) {
	if c, err := nldev.Dial(); err == nil {
		c.Close()
		t.Skip("this machine's kernel has RDMA netlink; the guest tests cover it")
	} else if !errors.Is(err, nldev.ErrNoRDMA) {
		t.Fatalf("Dial failed for another reason than missing RDMA: %v", err)
	}
	for _, args := range [][]string{{"res"}, {"res", "qp", "-j"}, {"dev"}, {"link"}} {
		stdout, stderr, code := rdmatrace(t, args...)
		if code == 0 {
			t.Errorf("rdmatrace %v exited 0 on a kernel without RDMA", args)
		}
		if stdout != "" {
			t.Errorf("rdmatrace %v printed %q on stdout", args, stdout)
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "no RDMA netlink support") {
			t.Errorf("rdmatrace %v: stderr %q, want one line saying there is no RDMA netlink support", args, stderr)
		}
	}
}

func TestUsageErrorsExitTwoAndListChoices(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"res", "qp", "colour", "red"}, "valid filters are cgroup, comm, container, dev, job, link, lqpn"},
		{[]string{"res", "qp", "state", "RUNNING"}, "valid values are RESET, INIT, RTR, RTS, SQD, SQE, ERR"},
		{[]string{"res", "cm_id", "-f", "ps SDP"}, "valid values are TCP, UDP, IB, IPoIB"},
		{[]string{"res", "queue"}, "valid types are pd, cq, qp, cm_id, mr, ctx, srq"},
		{[]string{"res", "qp", "-o", "xml"}, "valid formats are table, text, json, ndjson"},
		{[]string{"res", "qp", "-o", "legacy"}, "shows cm_id only"},
	} {
		_, stderr, code := rdmatrace(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
