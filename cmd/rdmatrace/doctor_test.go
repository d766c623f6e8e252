package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// doctorAs runs `rdmatrace doctor -j ARGS` as root under sudo for
// nobody (SUDO_UID 65534), with a 64 KiB RLIMIT_MEMLOCK; it returns
// stdout, the check findings by name, and stderr.
func doctorAs(t *testing.T, args ...string) (string, map[string]map[string]string, string) {
	t.Helper()
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &orig); err != nil {
		t.Fatal(err)
	}
	low := unix.Rlimit{Cur: 64 << 10, Max: orig.Max}
	if orig.Max < low.Cur {
		low.Cur = orig.Max
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &orig)
	cmd := exec.Command(os.Args[0], append([]string{"doctor", "-j"}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1", "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	out := o.String()
	findings := map[string]map[string]string{}
	if i := strings.Index(out, "["); i >= 0 {
		var list []map[string]string
		if err := json.Unmarshal([]byte(out[i:]), &list); err != nil {
			t.Fatalf("doctor -j: %v\n%s", err, out)
		}
		for _, f := range list {
			findings[f["check"]] = f
		}
	}
	return out, findings, e.String()
}

// doctor -- CMD under sudo runs CMD as the user who ran sudo, and judges
// that user's context: no CAP_IPC_LOCK to lift RLIMIT_MEMLOCK, device
// files by the user's uid. Both when CMD still runs at the check and when
// it ended before.
func TestDoctorRunsAndJudgesTheCommandAsTheSudoUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the program as another user (CI runs as root)")
	}
	for _, c := range []struct{ name, script string }{
		{"a program that ended before the check", "id -u"},
		{"a program that still runs at the check", "id -u; sleep 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, fs, stderr := doctorAs(t, "--after", "1s", "--", "sh", "-c", c.script)
			if !strings.HasPrefix(out, "65534\n") {
				t.Errorf("the program says it runs as %q, want 65534\nstderr: %s", strings.SplitN(out, "\n", 2)[0], stderr)
			}
			if m := fs["memlock"]; m["status"] != "fail" || !strings.Contains(m["detail"], "64 KiB") {
				t.Errorf("memlock: %v; want a failure at 64 KiB (nobody has no CAP_IPC_LOCK)", m)
			}
			if !strings.Contains(stderr, "running sh as nobody (uid 65534), from SUDO_UID") {
				t.Errorf("stderr does not say who runs the program:\n%s", stderr)
			}
		})
	}
}

func TestDoctorUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--after", "-1s", "--", "true"}, "rdmatrace: doctor: --after -1s: expected a positive duration"},
		{[]string{"doctor", "--user", "nobody", "--pid", "1"}, "rdmatrace: doctor: --user chooses who runs -- CMD"},
	} {
		if _, stderr, code := rdmatrace(t, c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
