package main

import (
	"strings"
	"testing"
)

// Without BPF, what needs it is refused in a line saying so, and a poll
// too short for a dump of everything is a usage error; both before
// netlink is opened, so they hold on any machine.
func TestTraceWithoutBPFRefusesWhatNeedsIt(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trace", "--netlink", "--", "true"}, 1, "no BPF (--netlink asked for none"},
		{[]string{"trace", "--netlink", "--follow-pid", "1"}, 1, "-- CMD, --follow-pid and --record-raw need it"},
		{[]string{"trace", "--netlink", "--poll", "10ms"}, 2, "--poll without BPF: at least 100ms"},
		{[]string{"trace", "--netlink", "--bpf"}, 1, "(--bpf: no fallback to RDMA netlink)"},
	} {
		stdout, stderr, code := rdmatrace(t, tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("rdmatrace %v: exit %d, stdout %q, stderr %q; want %d and one line with %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}
