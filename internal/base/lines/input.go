package lines

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/base/decompress"
	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
)

// Stdin is how a command line names standard input as an input file.
const Stdin = "-"

// SourceName is how an input is called in messages and reports: its path,
// or "stdin".
func SourceName(path string) string {
	if path == Stdin {
		return "stdin"
	}
	return path
}

// Open opens an input of a post-mortem (Stdin: stdin), decompressed
// whatever the compression (decompress.NewReader), up to maxInput bytes
// (decompress.DefaultLimit when 0). done closes it. Its errors name the
// file as it is: whoever prints them escapes them.
func Open(path string, stdin io.Reader, maxInput int64) (r io.Reader, done func(), err error) {
	name := SourceName(path)
	in, closeFile := stdin, func() {}
	if path != Stdin {
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
	dr, _, err := decompress.NewReader(in, maxInput)
	if err != nil {
		closeFile()
		return nil, nil, fmt.Errorf("read %s: %v", name, err)
	}
	return dr, func() { dr.Close(); closeFile() }, nil
}

// ReadError says why the input name could not be read further: an os
// error names its file already ("read PATH: ..."); others are given the
// name.
func ReadError(name string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("read %s: %v", name, err)
}

// StdinOnce checks, before anything is read, that Stdin is among paths
// once at most: each would be its own input, and stdin can be read once.
// hint says where it may go ("give it to one --log or to --recording").
func StdinOnce(paths []string, hint string) error {
	n := 0
	for _, p := range paths {
		if p == Stdin {
			n++
		}
	}
	if n > 1 {
		return errors.New("stdin (-) can be read once: " + hint)
	}
	return nil
}

// Drain calls next until the end of an input (io.EOF): a line it could
// not read, a *lineerr.Error, is passed to bad and counted, and reading
// goes on; any other error ends the input and is returned (nil at its
// end). This is every post-mortem reader's loop: tell a bad line, count
// it, go on.
func Drain(next func() error, bad func(*lineerr.Error)) (badLines int, err error) {
	for {
		err := next()
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return badLines, nil
		}
		var le *lineerr.Error
		if !errors.As(err, &le) {
			return badLines, err
		}
		badLines += le.Lines()
		if bad != nil {
			bad(le)
		}
	}
}
