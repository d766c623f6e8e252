package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
)

// The helpers leaks and the exporter still call with
// *cli.Context. They go when those commands read their flags in Options
// of their own (the layering test lists them as pending).

// usage makes a usage error of command c's (usagef elsewhere).
func usage(c *cli.Context, format string, a ...any) error {
	return usageErr(c.Command.Name, nil, fmt.Errorf(format, a...))
}

// atLeast rejects an integer flag below min; want says what is expected.
func atLeast(c *cli.Context, name string, min int, want string) error {
	if v := c.Int(name); v < min {
		return usage(c, "--%s %d: expected %s", name, v, want)
	}
	return nil
}

// parseEvents is eventFilterOptions.
func parseEvents(c *cli.Context, words []string, keys ...string) (*filter.Events, error) {
	return eventFilterOptions(c, words, keys...)
}

// openOTLP is startOTLP.
func openOTLP(_ *cli.Context, endpoint string) (*otlp.Sink, func(), error) {
	return startOTLP(endpoint)
}
