package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/tracer"
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

// maxArgs rejects positional arguments beyond n (hoistFlags' "--" aside):
// an ignored word is a mistake the user does not see.
func maxArgs(c *cli.Context, n int) error {
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) > n {
		return usage(c, "unexpected argument %q", args[n])
	}
	return nil
}

// atLeast rejects an integer flag below min; want says what is expected.
func atLeast(c *cli.Context, name string, min int, want string) error {
	if v := c.Int(name); v < min {
		return usage(c, "--%s %d: expected %s", name, v, want)
	}
	return nil
}

// checkTracerFlags checks the flags that trace and leaks share, before
// anything is loaded.
func checkTracerFlags(c *cli.Context) error {
	if d := c.Duration("duration"); d < 0 {
		return usage(c, "--duration %v: expected a positive duration such as 30s (0: no limit)", d)
	}
	if err := tracer.CheckRingSize(c.Int("ring-size")); err != nil {
		return usage(c, "--ring-size %d: %w", c.Int("ring-size"), err)
	}
	return nil
}
