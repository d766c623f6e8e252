package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/decompress"
	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
)

// maxInputFlag bounds what a compressed input may decompress to; every
// command that reads saved files (trace -r, leaks --log and --recording,
// parse) takes it.
var maxInputFlag = &cli.StringFlag{Name: "max-input", Value: "1GiB",
	Usage: "read at most `SIZE` of each compressed input once decompressed (e.g. 512MiB, 4G): a larger one is an error",
	Action: func(c *cli.Context, s string) error {
		if _, err := decompress.ParseSize(s); err != nil {
			return usageErr(c.Command.Name, nil, fmt.Errorf("--max-input %w", err))
		}
		return nil
	}}

// maxInputOptions is --max-input in bytes (checked when it was parsed).
func maxInputOptions(c *cli.Context) int64 {
	n, err := decompress.ParseSize(c.String("max-input"))
	if err != nil {
		return decompress.DefaultLimit
	}
	return n
}

// sourceName and openInput are lines' (lineio): how an input is called
// and opened (decompressed, "-" is stdin).
var (
	sourceName = lineio.SourceName
	openInput  = lineio.Open
)
