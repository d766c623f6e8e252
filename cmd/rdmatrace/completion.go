package main

import (
	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/cliargs"
	"github.com/rdmatrace/rdmatrace/internal/view/clidoc"
)

func init() { commands = append(commands, completionCommand()) }

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Completes commands (and rdma's abbreviations of them), options, resource types,\n" +
			"filter keys, output formats, event names, stat's and system's words, files after the\n" +
			"options that take one (-w, -r, --log...), the program and its arguments after --,\n" +
			"and the RDMA devices of /sys/class/infiniband (read at each <TAB>).\n" +
			"The script is made from the same command definitions as --help.\n\n" +
			"EXAMPLES:\n" +
			"   source <(rdmatrace completion bash)\n" +
			"   rdmatrace completion bash > /etc/bash_completion.d/rdmatrace\n" +
			"   rdmatrace completion zsh > \"${fpath[1]}/_rdmatrace\"\n" +
			"   rdmatrace completion fish > ~/.config/fish/completions/rdmatrace.fish\n\n" +
			"EXIT STATUS:\n" + exitStatus("the script could not be written", ""),
		Action: func(c *cli.Context) error {
			if err := maxArgs(c.Args().Slice(), 1); err != nil {
				return err
			}
			switch sh := c.Args().First(); sh {
			case "bash", "zsh", "fish":
				return clidoc.Completion(c.App.Writer, sh, cliargs.Grammar{Commands: commands, RDMA: rdmaCommands})
			case "":
				return usagef("which shell? bash, zsh or fish")
			default:
				return usagef("unknown shell %q: expected bash, zsh or fish", sh)
			}
		},
	}
}
