package main

import (
	"strings"
	"testing"
)

// The use case's options are checked before anything runs: -r with -w or
// -- CMD, -W without -C, are usage errors.
func TestTraceOptionsRefuseWhatCannotGoTogether(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"trace -r x.ndjson -w y.ndjson", "-r reads a recording"},
		{"trace -w y.ndjson -W 3", "-W N keeps N files of -C MB"},
		{"trace --print", "go with -w FILE"},
		{"trace --netlink --poll 50ms", "--poll without BPF: at least 100ms"},
	} {
		_, stderr, code := rdmatrace(t, strings.Fields(tc.args)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "rdmatrace: trace: ") {
			t.Errorf("%s: exit %d, %q; want a usage error of trace with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Options read outside a *cli.Context still name their command in a usage
// error: subcommands and the hidden help command too (help's was lost
// once, when its usage errors stopped taking the context).
func TestUsageErrorsNameTheirCommand(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"help trace extra", `rdmatrace: help: unexpected argument "extra"; see 'rdmatrace help --help'`},
		{"smc linkgroup -o text", "rdmatrace: linkgroup: -o text: smc linkgroup has table, json and ndjson"},
		{"gid -p 300", "rdmatrace: gid: --port 300: a port is 1 to 255; see 'rdmatrace gid --help'"},
		{"parse --max-input 1x", "rdmatrace: parse: --max-input "},
	} {
		_, stderr, code := rdmatrace(t, strings.Fields(tc.args)...)
		if code != 2 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
