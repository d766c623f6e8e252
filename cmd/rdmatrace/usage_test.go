package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/cliargs"
)

// Every command answers a usage mistake the same way: exit status 2, one
// line on stderr naming the command, what is wrong and where the help is,
// and nothing on stdout. None of these reaches the kernel, so they run
// anywhere.
func TestUsageErrorsAreOneLineAndExitTwoInEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string // in the line
	}{
		{"--bogus", "unknown flag --bogus"},
		{"nosuch", `unknown command "nosuch"`},
		{"tarce", `unknown command "tarce"; did you mean "trace"`},
		{"help rse", `unknown command "rse"; did you mean "res"`},
		{"-j nosuch", `unknown command "nosuch"`},
		{"trace --bogus", "unknown flag --bogus"},
		{"trace --count -1", "--count -1: expected 0 (no limit) or more"},
		{"trace -c x", `-c "x": expected a whole number`},
		{"trace --duration -1s", "--duration -1s: expected a positive duration"},
		{"trace --duration 5", `--duration "5": expected a duration`},
		{"trace -d 5s", `unknown resource type "5s"`}, // -d is --details now
		{"trace -o xml", `unknown output format "xml"`},
		{"trace qp colour red", `unknown event filter "colour": valid filters are cgroup, comm, container, dev, event, job, pid, pod, res`},
		{"trace queue", `unknown resource type "queue"`},
		{"trace --pid x", `filter pid: bad number "x"`},
		{"trace -p 1-", `filter pid: bad range "1-"`},
		{"trace --filter-event bogus", `filter event: unknown event "bogus"`},
		{"-j trace --filter-pid 1,x", `filter pid: bad number "x"`},
		{"trace --btf /nonexistent/vmlinux", "--btf /nonexistent/vmlinux: no such file or directory"},
		{"trace --btf ../../go.mod", "--btf ../../go.mod: not BTF: expected raw BTF (as in /sys/kernel/btf) or an ELF file with a .BTF section"},
		{"leaks --btf ../../go.mod", "--btf ../../go.mod: not BTF"},
		{"trace --ring-size 3", "--ring-size 3: expected a power of two from 4096 to 2147483648 bytes"},
		{"trace --ring-size 12288", "--ring-size 12288: expected a power of two"},
		{"trace --ring-size 4294967296", "--ring-size 4294967296: expected a power of two"},
		{"trace --ring-size 8589934592", "--ring-size 8589934592: expected a power of two"},
		{"trace --filter-res bogus", `unknown resource type "bogus"`},
		{"trace --kernel-only --user-only", "exclude each other"},
		{"trace --ready-file", "--ready-file needs a value"},
		{"trace --otlp 127.0.0.1:4318", "want an OTLP/HTTP URL"},
		{"exporter --no-trace --otlp http://127.0.0.1:4318", "not with --no-trace"},
		{"doctor --port 70000", "--port 70000: a port is 1 to 65535"},
		{"leaks --bogus", "unknown flag --bogus"},
		{"leaks --duration -5s", "--duration -5s: expected a positive duration"},
		{"leaks --interval -1s", "--interval -1s: expected a positive duration"},
		{"leaks --interval 0", "--interval 0s: expected a positive duration"},
		{"leaks --ring-size 4294967296", "--ring-size 4294967296: expected a power of two"},
		{"leaks --max-table 0", "--max-table 0: expected 1 or more"},
		{"leaks --recording x", "--recording goes with --log"},
		{"res --bogus", "unknown flag --bogus"},
		{"res c", `ambiguous resource type "c": it could be cq, cm_id, ctx`},
		{"res queue", `unknown resource type "queue"`},
		{"res qp -o xml", `unknown output format "xml"`},
		{"res qp colour red", `unknown qp filter "colour"`},
		{"res -o", "-o needs a value"},
		{"res qp --filter-pid x", `filter pid: bad number "x"`},
		{"res --filter-pid 1", "filters need a resource type"},
		{"ps -p 1,x", `filter pid: bad number "x"`},
		{"ports -tlx", "unknown flag -x in -tlx"},
		{"ports -al", "-a (every row) and -l (listening rows only) exclude each other"},
		{"trace -l a b", `unexpected argument "b"`},
		{"trace -l [", `pattern "[": syntax error in pattern`},
		{"sys set netns x", `netns mode "x": valid modes are shared, exclusive`},
		{"-j res qp colour red", `unknown qp filter "colour"`},
		{"res qp -dd colour red", `unknown qp filter "colour"`},
		{"dev --bogus", "unknown flag --bogus"},
		{"dev rxe0 rxe1", `unexpected argument "rxe1"`},
		{"dev show rxe0 rxe1", `unexpected argument "rxe1"`},
		{"dev -o xml", `unknown output format "xml"`},
		{"link --bogus", "unknown flag --bogus"},
		{"link rxe0/1 rxe1/1", `unexpected argument "rxe1/1"`},
		{"parse --bogus", "unknown flag --bogus"},
		{"ps --pid x", `filter pid: bad number "x"`},
		{"ps -o text", "-o text: ps has table, json and ndjson"},
		{"ps rping", `unexpected argument "rping"`},
		{"parse -x", "unknown flag -x"},
		{"leaks --pid x", `filter pid: bad number "x"`},
		{"leaks --filter-event create", "unknown flag --filter-event"},
		{"leaks --output report.txt -- true", "--output is now --report FILE"},
		{"trace -o xml", `unknown output format "xml": valid formats are text, json, ndjson`},
	} {
		t.Run(tc.args, func(t *testing.T) {
			args := strings.Fields(tc.args)
			stdout, stderr, code := rdmatrace(t, args...)
			cmd := ""
			for _, a := range args {
				if !strings.HasPrefix(a, "-") {
					if full := rdmaAbbrev(a, commands); full != "" {
						a = full
					}
					if cliargs.Find(a, commands) != nil && a != "help" {
						cmd = a
					}
					break
				}
			}
			help, prefix := "rdmatrace", ""
			if cmd != "" {
				help, prefix = "rdmatrace "+cmd, cmd+": "
			}
			line := regexp.MustCompile(`^rdmatrace: ` + regexp.QuoteMeta(prefix) + `.+; see '` + regexp.QuoteMeta(help) + ` --help'\n$`)
			if code != 2 || stdout != "" || !line.MatchString(stderr) || !strings.Contains(stderr, tc.want) {
				t.Errorf("rdmatrace %s: exit %d, stdout %q, stderr %q;\nwant exit 2, no stdout, one line \"rdmatrace: %s...; see '%s --help'\" containing %q",
					tc.args, code, stdout, stderr, prefix, help, tc.want)
			}
		})
	}
}
