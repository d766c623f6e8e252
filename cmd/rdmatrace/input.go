package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/decompress"
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

// sourceName is how a log or recording is called in messages and reports.
func sourceName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// openInput opens a log or recording ("-": stdin), decompressed whatever
// the compression, up to maxInput bytes. Its errors name the file as it
// is: whoever prints them escapes them (main does).
func openInput(path string, stdin io.Reader, maxInput int64) (io.Reader, func(), error) {
	name := sourceName(path)
	in, closeFile := stdin, func() {}
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, nil, fmt.Errorf("open %s: %v", name, err)
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, nil, fmt.Errorf("read %s: is a directory (name the files in it)", name)
		}
		in, closeFile = f, func() { f.Close() }
	}
	r, _, err := decompress.NewReader(in, maxInput)
	if err != nil {
		closeFile()
		return nil, nil, fmt.Errorf("read %s: %v", name, err)
	}
	return r, func() { r.Close(); closeFile() }, nil
}

// readError says why an input could not be read further: an os error
// names its file already ("read PATH: ..."); others are given its name.
func readError(name string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("read %s: %v", name, err)
}
