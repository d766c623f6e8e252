package main

import (
	"strings"
	"testing"
)

// Global options before the command (rdmatrace -j res) failed before.
func TestHoistFlagsMovesSubcommandFlagsBeforeArguments(t *testing.T) {
	cmds := newApp().Commands
	for _, tc := range []struct{ in, want string }{
		{"rdmatrace res qp -j", "rdmatrace res -j -- qp"},
		{"rdmatrace res qp type RC -o text", "rdmatrace res -o text -- qp type RC"},
		{"rdmatrace res cm_id --filter=state=x", "rdmatrace res --filter=state=x -- cm_id"},
		{"rdmatrace res -j", "rdmatrace res -j"},
		{"rdmatrace res", "rdmatrace res"},
		{"rdmatrace res qp link rxe0/- -j", "rdmatrace res -j -- qp link rxe0/-"},
		{"rdmatrace nosuch -j x", "rdmatrace nosuch -j x"},
		// iproute2's global options, before the object and after it.
		{"rdmatrace -j res show qp", "rdmatrace res -j -- show qp"},
		{"rdmatrace -j -p res s qp -d", "rdmatrace res -j -p -d -- s qp"},
		{"rdmatrace -dd dev", "rdmatrace dev -d"},
		{"rdmatrace -d dev", "rdmatrace dev -d"},
		{"rdmatrace -d link -j", "rdmatrace link -d -j"},
		{"rdmatrace gid -d rxe0 -j", "rdmatrace gid -d rxe0 -j"},
		{"rdmatrace link -dd -j", "rdmatrace link -d -j"},
		{"rdmatrace -o json res qp", "rdmatrace res -o json -- qp"},
		{"rdmatrace -V res", "rdmatrace -V res"},
		{"rdmatrace --help trace", "rdmatrace --help trace"},
		{"rdmatrace -j nosuch x", "rdmatrace nosuch -j x"},
		{"rdmatrace trace -p 12 qp comm rping", "rdmatrace trace -p 12 -- qp comm rping"},
		{"rdmatrace leaks -j -- ./a -j", "rdmatrace leaks -j -- -- ./a -j"},
		// A subcommand's flags stay its own, wherever they were typed.
		{"rdmatrace smc device -j", "rdmatrace smc device -j"},
		{"rdmatrace -j smc lgr -p", "rdmatrace smc lgr -j -p"},
		{"rdmatrace smc -o json linkgroup", "rdmatrace smc linkgroup -o json"},
		{"rdmatrace smc -j", "rdmatrace smc -j"},
		// Short flags bundled, the last taking a value (ports, as ss).
		{"rdmatrace ports -jo json -t", "rdmatrace ports -jo json -t"},
		{"rdmatrace ports -tln", "rdmatrace ports -tln"},
		{"rdmatrace -j -p ports -tlnp", "rdmatrace ports -j -p -tlnp"},
	} {
		got := strings.Join(hoistFlags(strings.Fields(tc.in), cmds), " ")
		if got != tc.want {
			t.Errorf("hoistFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// rdmatrace sys, st, l: rdma's abbreviations of its commands, first match
// in rdma's order (failed before: unknown command "sys").
func TestHoistFlagsSpellsOutRdmaAbbreviations(t *testing.T) {
	cmds := newApp().Commands
	for _, tc := range []struct{ in, want string }{
		{"rdmatrace sys", "rdmatrace system"},
		{"rdmatrace -j sys show", "rdmatrace system -j -- show"},
		{"rdmatrace s", "rdmatrace system"},
		{"rdmatrace st qp mode", "rdmatrace statistic -- qp mode"},
		{"rdmatrace stat", "rdmatrace stat"},
		{"rdmatrace l", "rdmatrace link"},
		{"rdmatrace d", "rdmatrace dev"},
		{"rdmatrace r qp", "rdmatrace resource -- qp"},
		{"rdmatrace reso qp", "rdmatrace resource -- qp"},
		{"rdmatrace h", "rdmatrace help"},
		{"rdmatrace res", "rdmatrace res"},
		// Commands rdma does not have are spelled out.
		{"rdmatrace tr", "rdmatrace tr"},
		{"rdmatrace le", "rdmatrace le"},
		{"rdmatrace sm", "rdmatrace sm"},
		{"rdmatrace leaks -- s", "rdmatrace leaks -- -- s"},
	} {
		got := strings.Join(hoistFlags(strings.Fields(tc.in), cmds), " ")
		if got != tc.want {
			t.Errorf("hoistFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// ps -p PID is procps' and lsof's; -p with no PID after it stays
// iproute2's pretty (failed before: unexpected argument).
func TestHoistFlagsReadsPsDashPAsPIDOrPretty(t *testing.T) {
	cmds := newApp().Commands
	for _, tc := range []struct{ in, want string }{
		{"rdmatrace ps -p 1234", "rdmatrace ps -p 1234"},
		{"rdmatrace ps -p 1234,5678 -j", "rdmatrace ps -p 1234,5678 -j"},
		{"rdmatrace ps -p 1,x", "rdmatrace ps -p 1,x"},
		{"rdmatrace ps -j -p", "rdmatrace ps -j --pretty"},
		{"rdmatrace -j -p ps", "rdmatrace ps -j --pretty"},
		{"rdmatrace -j -p ps -p 1234", "rdmatrace ps -j --pretty -p 1234"},
		{"rdmatrace ps -p -j", "rdmatrace ps --pretty -j"},
		// Elsewhere -p is what it was.
		{"rdmatrace res -j -p", "rdmatrace res -j -p"},
		{"rdmatrace trace -p 12", "rdmatrace trace -p 12"},
	} {
		got := strings.Join(hoistFlags(strings.Fields(tc.in), cmds), " ")
		if got != tc.want {
			t.Errorf("hoistFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
