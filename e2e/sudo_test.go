//go:build e2e

package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSudoFilesAndKilledRuns: what a run leaves on the machine. Under
// sudo (SUDO_UID), an output file is made as the user who ran it: -w
// /etc/ld.so.preload, where that user may not write, is refused, and a
// report in the user's directory is the user's. A leaks -- CMD killed
// with SIGKILL leaves its program's cgroup (nothing of it runs to remove
// it); the next run removes it and says so.
func TestSudoFilesAndKilledRuns(t *testing.T) {
	needFullTier(t) // nothing here depends on the kernel's version
	needDevice(t)
	needModuleBTF(t)
	sudo := []string{"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody"}

	t.Run("sudo -w /etc/ld.so.preload is refused", func(t *testing.T) {
		const preload = "/etc/ld.so.preload"
		if _, err := os.Lstat(preload); err == nil {
			t.Skipf("%s exists here", preload)
		}
		cmd := exec.Command(*rdmatraceBin, "trace", "-w", preload, "--duration", "1s", "--no-snapshot")
		cmd.Env = append(os.Environ(), sudo...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "-w: create "+preload+": permission denied") {
			t.Errorf("SUDO_UID=65534 trace -w %s: %v\n%s\nwant exit 1 and permission denied", preload, err, out)
		}
		if st, err := os.Lstat(preload); err == nil {
			os.Remove(preload)
			t.Errorf("%s was made: %v, uid %d", preload, st.Mode(), st.Sys().(*syscall.Stat_t).Uid)
		}
	})

	// The cgroup of a leaks -- sleep, killed with SIGKILL.
	ready := filepath.Join(t.TempDir(), "ready")
	killed := exec.Command(*rdmatraceBin, "leaks", "--ready-file", ready, "--", "sleep", "600")
	var killedErr lines
	killed.Stderr = &killedErr
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = killed.Process.Kill(); _ = killed.Wait() })
	waitFor(t, 60*time.Second, "rdmatrace leaks -- sleep to attach", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	name := "rdmatrace-leaks-" + strconv.Itoa(killed.Process.Pid)
	var cgroup string
	waitFor(t, 10*time.Second, "the program's cgroup "+name, func() bool {
		_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == name {
				cgroup = p
				return fs.SkipAll
			}
			return nil
		})
		return cgroup != ""
	})
	_ = killed.Process.Signal(syscall.SIGKILL)
	_ = killed.Wait()
	waitFor(t, 10*time.Second, "the killed run's sleep to die with it", func() bool {
		b, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
		return err == nil && len(strings.TrimSpace(string(b))) == 0
	})
	if _, err := os.Stat(cgroup); err != nil {
		t.Fatalf("no cgroup left by the killed run (%v): the test proves nothing", err)
	}

	t.Run("the next run removes it, and under sudo its report is the user's", func(t *testing.T) {
		report := filepath.Join(userDir(t, 65534), "report")
		cmd := exec.Command(*rdmatraceBin, "leaks", "--report", report, "--", "true")
		cmd.Env = append(os.Environ(), sudo...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("leaks -- true: %v\n%s", err, out)
		}
		if _, err := os.Stat(cgroup); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the next run: %v\n%s", cgroup, err, out)
		}
		if said := string(out); !strings.Contains(said, "empty cgroup(s) that killed runs left: ") || !strings.Contains(said, cgroup) {
			t.Errorf("the next run did not say it removed %s:\n%s", cgroup, out)
		}
		st, err := os.Stat(report)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || st.Mode() != 0o600 {
			t.Errorf("the report: uid %d mode %v, want nobody's -rw-------", s.Uid, st.Mode())
		}
	})
}
