package cliargs

import (
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

var grammar = Grammar{
	Commands: []*cli.Command{
		{Name: "res", Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Aliases: []string{"j"}}, &cli.StringFlag{Name: "output", Aliases: []string{"o"}},
			&cli.BoolFlag{Name: "details", Aliases: []string{"d"}}}},
		{Name: "system", Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Aliases: []string{"j"}}}},
		{Name: "trace", Flags: []cli.Flag{&cli.IntFlag{Name: "count", Aliases: []string{"c"}}}},
	},
	RDMA: []string{"help", "dev", "link", "resource", "system", "statistic"},
}

// Options go anywhere, as iproute2's rdma takes them; rdma's
// abbreviations name its commands, and no other; -dd is -d; what follows
// "--" stays a program's, after the "--" the flag parser takes.
func TestHoistReadsTheCommandLineAsRDMADoes(t *testing.T) {
	for in, want := range map[string]string{
		"rdmatrace -j res qp -o json":    "rdmatrace res -j -o json -- qp",
		"rdmatrace sys -j":               "rdmatrace system -j",
		"rdmatrace res -dd qp":           "rdmatrace res -d -- qp",
		"rdmatrace trace -c 3 -- app -j": "rdmatrace trace -c 3 -- -- app -j",
		"rdmatrace -j nosuch":            "rdmatrace nosuch -j",
	} {
		if got := strings.Join(grammar.Hoist(strings.Fields(in)), " "); got != want {
			t.Errorf("Hoist(%q) = %q, want %q", in, got, want)
		}
	}
	if got := grammar.Abbrev("tr"); got != "" {
		t.Errorf(`Abbrev("tr") = %q: rdma has no trace`, got)
	}
}

// The flag package's complaints, in words, with flags as they are typed.
func TestUsageTextSaysWhatIsWrong(t *testing.T) {
	flags := grammar.Commands[2].Flags
	for in, want := range map[string]string{
		"flag provided but not defined: -x":                "unknown flag -x",
		"flag provided but not defined: -cz":               "unknown flag -z in -cz",
		"flag needs an argument: -count":                   "--count needs a value",
		`invalid value "abc" for flag -count: parse error`: `--count "abc": expected a whole number`,
		"something else":                                   "something else",
	} {
		if got := UsageText(errors.New(in), flags); got != want {
			t.Errorf("UsageText(%q) = %q, want %q", in, got, want)
		}
	}
}
