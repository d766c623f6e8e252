// Package cliargs is the command line as iproute2's rdma reads it, over
// urfave/cli's command definitions: options anywhere among a command's
// words, the command words rdma abbreviates, -dd as -d; and the flag
// package's complaints in words a user reads.
package cliargs

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Grammar is a command line's: its commands, and the command words it
// shares with rdma, in the order rdma tries them for an abbreviation.
type Grammar struct {
	Commands []*cli.Command
	RDMA     []string
}

// Hoist rewrites the command line the way iproute2 reads it:
//   - options before the command are the command's: `rdmatrace -j res qp`
//     is `rdmatrace res -j qp` (but -V, --version, -h, --help stay
//     rdmatrace's own);
//   - a command's options go anywhere among its arguments: `rdmatrace res
//     qp -j` is `rdmatrace res -j qp` (urfave/cli stops at the first
//     positional argument);
//   - -dd is -d: rdmatrace has one level of details;
//   - a command word may be abbreviated as rdma abbreviates it
//     (Abbrev): `rdmatrace sys` is `rdmatrace system`;
//   - in a command where -p is a PID (ps, as in procps and lsof) and
//     --pretty exists too, -p followed by a PID list is the PID and any
//     other -p is iproute2's pretty: `rdmatrace -j -p ps -p 1234`.
//
// Everything after "--" stays where it is: it belongs to a program being
// run.
func (g Grammar) Hoist(args []string) []string {
	cmds := g.Commands
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
		if full := g.Abbrev(a); full != "" {
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
		if a == "-p" && pidOrPretty && (i+1 >= len(tail) || !IsPIDList(tail[i+1])) {
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

// Abbrev is the command that word abbreviates as rdma reads it (the
// first of g.RDMA it begins), or "" when word is a command's own name (or
// alias) or abbreviates none. Commands rdma does not have are spelled
// out: "tr" is no trace.
func (g Grammar) Abbrev(word string) string {
	for _, c := range g.Commands {
		if c.HasName(word) {
			return ""
		}
	}
	if word == "" {
		return ""
	}
	for _, full := range g.RDMA {
		if strings.HasPrefix(full, word) {
			return full
		}
	}
	return ""
}

// IsPIDList says whether s is meant as a PID list (1234, 1,2,3,
// 2000-2100): it begins with a digit. The filter parser says what is
// wrong with the rest ("1,x").
func IsPIDList(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

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

// UsageText rewrites the flag package's messages in rdmatrace's words,
// with flags spelled as they are typed.
func UsageText(err error, flags []cli.Flag) string {
	s := err.Error()
	if f, ok := strings.CutPrefix(s, "flag provided but not defined: -"); ok {
		if x := unknownInBundle(f, flags); x != "" {
			return "unknown flag -" + x + " in -" + f
		}
		return "unknown flag " + Dashes(f)
	}
	if f, ok := strings.CutPrefix(s, "flag needs an argument: -"); ok {
		return Dashes(f) + " needs a value"
	}
	// invalid value "abc" for flag -count: parse error
	if rest, ok := strings.CutPrefix(s, "invalid value "); ok {
		if v, f, ok := strings.Cut(rest, " for flag -"); ok {
			f, why, _ := strings.Cut(f, ": ")
			if why == "parse error" {
				why = expected(f, flags)
			}
			return Dashes(f) + " " + v + ": " + why
		}
	}
	return s
}

// unknownInBundle is the first letter of f that is no short flag, when
// f reads as short flags bundled (-tlx: its first letter is one); "" if
// not.
func unknownInBundle(f string, flags []cli.Flag) string {
	if len(f) < 2 || strings.HasPrefix(f, "-") {
		return ""
	}
	short := map[string]bool{}
	for _, fl := range flags {
		for _, n := range fl.Names() {
			if len(n) == 1 {
				short[n] = true
			}
		}
	}
	if !short[f[:1]] {
		return ""
	}
	for _, r := range f {
		if !short[string(r)] {
			return string(r)
		}
	}
	return ""
}

// expected says what a flag's value should look like.
func expected(name string, flags []cli.Flag) string {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			switch f.(type) {
			case *cli.IntFlag, *cli.UintFlag, *cli.Int64Flag, *cli.Uint64Flag:
				return "expected a whole number"
			case *cli.DurationFlag:
				return "expected a duration such as 30s or 1m30s"
			}
		}
	}
	return "parse error"
}

// Dashes spells a flag name as typed: -o, --output.
func Dashes(name string) string {
	name = strings.TrimPrefix(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
