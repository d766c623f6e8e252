package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// outputOwner is who the files rdmatrace writes for its user belong to:
// under sudo the user who ran it, who can then read, move and remove them
// without root (as tcpdump -Z gives its files away). They are made 0600
// by safefile, so giving them away shows them to no one else.
func outputOwner() *safefile.Owner { return safefile.Invoker(os.Getenv) }

// writeReadyFile writes --ready-file's text, when asked, in one step: a
// script polling for the file finds it whole.
func writeReadyFile(c *cli.Context, text string) error {
	p := c.String("ready-file")
	if p == "" {
		return nil
	}
	if err := safefile.WriteFile(p, []byte(text), outputOwner()); err != nil {
		return exitWith(1, fmt.Errorf("--ready-file: %s", formats.Sanitize(err.Error())))
	}
	return nil
}
