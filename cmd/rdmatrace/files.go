package main

import (
	"os"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// outputOwner is who the files rdmatrace writes for its user belong to:
// under sudo the user who ran it, who can then read, move and remove them
// without root (as tcpdump -Z gives its files away). They are made 0600
// by safefile, so giving them away shows them to no one else.
func outputOwner() *safefile.Owner { return safefile.Invoker(os.Getenv) }
