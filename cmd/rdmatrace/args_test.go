package main

import (
	"strings"
	"testing"
)

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
	} {
		got := strings.Join(hoistFlags(strings.Fields(tc.in), cmds), " ")
		if got != tc.want {
			t.Errorf("hoistFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
