package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// hoistFlags moves a subcommand's flags in front of its positional
// arguments, so `rdmatrace res qp -j` works like `rdmatrace res -j qp`
// (urfave/cli stops at the first positional argument). Everything after
// "--" stays where it is: it belongs to a program being run.
func hoistFlags(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	ci := -1
	for i, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue // a global flag
		}
		for _, c := range cmds {
			if c.HasName(a) {
				cmd, ci = c, i+1
			}
		}
		break
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, rest []string
	tail := args[ci+1:]
	for i := 0; i < len(tail); i++ {
		a := tail[i]
		if a == "--" {
			rest = append(rest, tail[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || a == "-" || name == "" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(tail) {
			i++
			flags = append(flags, tail[i])
		}
	}
	out := append([]string{}, args[:ci+1]...)
	out = append(out, flags...)
	if len(rest) > 0 && rest[0] != "--" {
		out = append(out, "--")
	}
	return append(out, rest...)
}
