package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// hoistFlags rewrites the command line the way iproute2 reads it:
//   - options before the command are the command's: `rdmatrace -j res qp`
//     is `rdmatrace res -j qp` (but -V, --version, -h, --help stay
//     rdmatrace's own);
//   - a command's options go anywhere among its arguments: `rdmatrace res
//     qp -j` is `rdmatrace res -j qp` (urfave/cli stops at the first
//     positional argument);
//   - -dd is -d: rdmatrace has one level of details;
//   - a command word may be abbreviated as rdma abbreviates it
//     (rdmaAbbrev): `rdmatrace sys` is `rdmatrace system`;
//   - in a command where -p is a PID (ps, as in procps and lsof) and
//     --pretty exists too, -p followed by a PID list is the PID and any
//     other -p is iproute2's pretty: `rdmatrace -j -p ps -p 1234`.
//
// Everything after "--" stays where it is: it belongs to a program being
// run.
func hoistFlags(args []string, cmds []*cli.Command) []string {
	if len(args) < 2 {
		return args
	}
	// Before the command, -o json is the -o of whichever command has one;
	// -p there is iproute2's -p (pretty), not trace's -p PID.
	anyValue := map[string]bool{}
	for _, c := range cmds {
		for n, v := range valueFlags(c) {
			anyValue[n] = anyValue[n] || v
		}
	}
	anyValue["p"] = false
	// -d there is iproute2's -d (details), not gid's -d DEV.
	anyValue["d"] = false
	var cmd *cli.Command
	ci, word := -1, -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			switch a {
			case "-V", "--version", "-version", "-h", "--help", "-help":
				return args // rdmatrace's own: the command is not run
			}
			if n := strings.TrimLeft(a, "-"); !strings.Contains(n, "=") && anyValue[n] {
				i++
			}
			continue // the command's, moved after it below
		}
		word = i
		if full := rdmaAbbrev(a, cmds); full != "" {
			args = append(append(append([]string{}, args[:i]...), full), args[i+1:]...)
			a = full
		}
		for _, c := range cmds {
			if c.HasName(a) {
				cmd, ci = c, i
			}
		}
		break
	}
	if cmd == nil && word > 1 {
		// `rdmatrace -j nosuch`: the word first, so that the answer is
		// "unknown command", not "unknown flag -j".
		out := append([]string{args[0], args[word]}, args[1:word]...)
		return append(out, args[word+1:]...)
	}
	if cmd == nil {
		return args
	}
	// A subcommand (smc linkgroup) takes the flags: both words first.
	words, tail := []string{args[ci]}, append(append([]string{}, args[1:ci]...), args[ci+1:]...)
	if sub, si := subcommand(cmd, args, ci); sub != nil {
		words = append(words, args[si])
		tail = append(append(append([]string{}, args[1:ci]...), args[ci+1:si]...), args[si+1:]...)
		cmd = sub
	}
	flags, rest := sortFlags(tail, cmd)
	out := append([]string{args[0]}, words...)
	out = append(out, flags...)
	if len(rest) > 0 {
		// The flag parser takes this one; a "--" of the user's stays, to
		// part trace's filter words from its CMD.
		out = append(out, "--")
	}
	return append(out, rest...)
}

// sortFlags parts a command's words into its flags (with their values;
// -dd as -d, ps' -p with no PID list after it as --pretty) and the rest,
// whose "--" and what follows stay as they are.
func sortFlags(tail []string, cmd *cli.Command) (flags, rest []string) {
	takesValue := valueFlags(cmd)
	pidOrPretty := takesValue["p"] && hasFlag(cmd, "pretty")
	for i := 0; i < len(tail); i++ {
		a := tail[i]
		if a == "--" {
			return flags, append(rest, tail[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || a == "-" || name == "" {
			rest = append(rest, a)
			continue
		}
		if name == "dd" {
			a, name = "-d", "d"
		}
		if a == "-p" && pidOrPretty && (i+1 >= len(tail) || !isPIDList(tail[i+1])) {
			a, name = "--pretty", "pretty"
		}
		flags = append(flags, a)
		if !strings.Contains(name, "=") && (takesValue[name] || bundleTakesValue(a, takesValue)) && i+1 < len(tail) {
			i++
			flags = append(flags, tail[i])
		}
	}
	return flags, rest
}

// subcommand finds the first word after cmd's (args[ci]) and returns the
// subcommand of cmd it names, with its index; nil when it names none.
func subcommand(cmd *cli.Command, args []string, ci int) (*cli.Command, int) {
	if len(cmd.Subcommands) == 0 {
		return nil, 0
	}
	takesValue := valueFlags(cmd)
	for i := ci + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			if n := strings.TrimLeft(a, "-"); !strings.Contains(n, "=") && takesValue[n] {
				i++
			}
			continue
		}
		for _, sub := range cmd.Subcommands {
			if sub.HasName(a) {
				return sub, i
			}
		}
		break
	}
	return nil, 0
}

// rdmaCommands are the commands rdmatrace shares with iproute2's rdma, in
// the order rdma tries them: rdma takes a command word that begins one of
// them as the first it begins ("s" is system, "st" statistic, "l" link).
var rdmaCommands = []string{"help", "dev", "link", "resource", "system", "statistic"}

// rdmaAbbrev is the command that word abbreviates as rdma reads it, or ""
// when word is a command's own name (or alias) or abbreviates none.
// Commands rdma does not have are spelled out: "tr" is no trace.
func rdmaAbbrev(word string, cmds []*cli.Command) string {
	for _, c := range cmds {
		if c.HasName(word) {
			return ""
		}
	}
	if word == "" {
		return ""
	}
	for _, full := range rdmaCommands {
		if strings.HasPrefix(full, word) {
			return full
		}
	}
	return ""
}

// isPIDList says whether s is meant as a PID list (1234, 1,2,3,
// 2000-2100): it begins with a digit. The filter parser says what is
// wrong with the rest ("1,x").
func isPIDList(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// bundleTakesValue says whether a is short flags bundled (-jo, as ports
// takes them) whose last one takes a value: -jo json.
func bundleTakesValue(a string, takesValue map[string]bool) bool {
	name := a[1:]
	if strings.HasPrefix(a, "--") || len(name) < 2 {
		return false
	}
	if _, known := takesValue[name]; known {
		return false
	}
	return takesValue[name[len(name)-1:]]
}

// hasFlag says whether cmd has a flag called name.
func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// valueFlags says, for each of cmd's flag names, whether it takes a value.
func valueFlags(cmd *cli.Command) map[string]bool {
	m := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			m[n] = !isBool
		}
	}
	return m
}

// maxArgs rejects positional arguments beyond n (hoistFlags' "--" aside):
// an ignored word is a mistake the user does not see.
func maxArgs(args []string, n int) error {
	if args = positional(args); len(args) > n {
		return usagef("unexpected argument %q", args[n])
	}
	return nil
}

// positional are a command's arguments without hoistFlags' "--".
func positional(args []string) []string {
	if len(args) > 0 && args[0] == "--" {
		return args[1:]
	}
	return args
}
