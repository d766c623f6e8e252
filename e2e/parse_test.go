//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"
)

// parseOfLiveKernelFilesystemsReturns runs `rdmatrace parse` over the
// live pseudo-filesystems of a kernel with rxe and a running rping pair:
// the README's own /sys/kernel/debug (whose tracing/ automount holds
// trace_pipe), tracefs itself, /proc/sys and /sys. Each must return within
// a minute, exit 0 and print nothing: only rdma_cm/ is read there (the
// walk once read trace_pipe and blocked for ever, and a walk of tracefs's
// events/ took over a minute on 6.1 under TCG). trace_pipe named on its
// own is a note, not a wait.
func parseOfLiveKernelFilesystemsReturns(t *testing.T) {
	for _, tc := range []struct{ dir, note string }{
		{"/sys/kernel/debug", ""},
		{"/sys/kernel/tracing", ""},
		{"/proc/sys", ""},
		{"/sys", ""},
		{"/sys/kernel/tracing/trace_pipe", "rdmatrace: skipped /sys/kernel/tracing/trace_pipe: a stream: reading it would block\n"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, *rdmatraceBin, "parse", "-j", tc.dir)
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			start := time.Now()
			err := cmd.Run()
			t.Logf("parse %s: %v in %v, %d bytes of records, stderr:\n%s", tc.dir, err, time.Since(start).Round(time.Millisecond), o.Len(), e.String())
			if ctx.Err() != nil {
				t.Fatalf("parse %s still running after 60 s", tc.dir)
			}
			if err != nil {
				t.Errorf("parse %s: %v; want exit 0", tc.dir, err)
			}
			if e.String() != tc.note || o.Len() != 0 {
				t.Errorf("stdout %q, stderr %q; want nothing and %q", o.String(), e.String(), tc.note)
			}
		})
	}
}
