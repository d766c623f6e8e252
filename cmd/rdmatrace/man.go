//go:build !urfave_cli_no_docs

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/view/clidoc"
)

// The man page generator is left out of the installed binary (the Makefile
// builds with urfave_cli_no_docs): `make man` runs it from source.
func init() {
	commands = append(commands, &cli.Command{
		Name:   "generate-man",
		Usage:  "write rdmatrace(8) in roff, from the command definitions",
		Hidden: true,
		Action: func(c *cli.Context) error {
			if err := maxArgs(c.Args().Slice(), 0); err != nil {
				return err
			}
			page, err := clidoc.ManPage(c.App)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	})
}
