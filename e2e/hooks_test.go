//go:build e2e

package e2e

import (
	"bytes"
	"strings"
	"testing"
)

// TestEveryHookAttaches runs the tracer in both modes and checks that every
// hook attaches on this kernel: a hook renamed or gone in a new kernel
// (sid's 7.x calls cm_send_mra cm_prepare_mra) must get a variant, not
// silently trace less.
func TestEveryHookAttaches(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	for _, mode := range []string{"btf", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"trace", "--no-snapshot", "-d", "1s"}
			if mode == "fallback" {
				args = append(args, "--fallback")
			}
			_, stderr, err := runStatus(*rdmatraceBin, args...)
			if err != nil {
				t.Fatalf("rdmatrace %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			for _, l := range strings.Split(string(stderr), "\n") {
				if strings.Contains(l, " not attached: ") {
					t.Errorf("kernel %s: %s", release(t), l)
				}
			}
			for _, l := range bytes.Split(stderr, []byte("\n")) {
				if bytes.HasPrefix(l, []byte("rdmatrace: hooks attached:")) {
					t.Logf("kernel %s: %s", release(t), l)
				}
			}
		})
	}
}
