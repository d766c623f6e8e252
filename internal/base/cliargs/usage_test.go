package cliargs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/urfave/cli/v2"
)

// A usage error made below a command's entry, without its context, names
// the command once NameUsage has wrapped the action; one that names its
// command already, or is not Usagef's, is left as it is.
func TestNameUsageNamesTheCommandThatRan(t *testing.T) {
	action := NameUsage("trace", func(*cli.Context) error {
		return fmt.Errorf("wrapped: %w", Usagef("rdmatrace", "--count %d: expected 0 or more", -1))
	})
	err := action(nil)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("%v: not a usage error", err)
	}
	if want := "trace: --count -1: expected 0 or more; see 'rdmatrace trace --help'"; ue.Error() != want {
		t.Errorf("got %q, want %q", ue.Error(), want)
	}
	other := &UsageError{Program: "rdmatrace", Cmd: "gid", Err: errors.New("x")}
	if err := NameUsage("trace", func(*cli.Context) error { return other })(nil); err.Error() != "gid: x; see 'rdmatrace gid --help'" {
		t.Errorf("a usage error of gid became %q", err)
	}
	if err := (&UsageError{Program: "rdmatrace", Err: errors.New("unknown command \"x\"")}); err.Error() != "unknown command \"x\"; see 'rdmatrace --help'" {
		t.Errorf("the program's own: %q", err.Error())
	}
}

// An unknown command is named with the nearest one a user may see: a
// hidden command is never suggested.
func TestUnknownSuggestsTheNearestVisibleCommand(t *testing.T) {
	cmds := []*cli.Command{{Name: "trace"}, {Name: "tracer", Hidden: true}, {Name: "res", Aliases: []string{"resource"}}}
	if err := Unknown("trac", cmds); err.Error() != `unknown command "trac"; did you mean "trace"` {
		t.Errorf("got %q", err)
	}
	if err := Unknown("zzzzzz", cmds); err.Error() != `unknown command "zzzzzz"` {
		t.Errorf("got %q", err)
	}
	if Find("resource", cmds) != cmds[2] || Find("tracer", cmds) != cmds[1] || Find("x", cmds) != nil {
		t.Error("Find does not find a command by its name or alias")
	}
}
