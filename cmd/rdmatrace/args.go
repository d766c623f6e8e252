package main

import (
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/cliargs"
)

// rdmaCommands are the commands rdmatrace shares with iproute2's rdma, in
// the order rdma tries them: rdma takes a command word that begins one of
// them as the first it begins ("s" is system, "st" statistic, "l" link).
var rdmaCommands = []string{"help", "dev", "link", "resource", "system", "statistic"}

// hoistFlags rewrites the command line the way iproute2 reads it
// (cliargs.Grammar.Hoist): options before the command and among its
// arguments are the command's, rdma's abbreviations, -dd as -d, ps' -p.
func hoistFlags(args []string, cmds []*cli.Command) []string {
	return cliargs.Grammar{Commands: cmds, RDMA: rdmaCommands}.Hoist(args)
}

// rdmaAbbrev is the command that word abbreviates as rdma reads it, or "".
func rdmaAbbrev(word string, cmds []*cli.Command) string {
	return cliargs.Grammar{Commands: cmds, RDMA: rdmaCommands}.Abbrev(word)
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
