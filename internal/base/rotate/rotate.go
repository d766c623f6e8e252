// Package rotate writes a recording to a file that is rotated by size,
// as tcpdump's and ptcpdump's -C and -W do, but named as logrotate names
// them: FILE is the newest, FILE.1 the one before it, up to FILE.(W-1).
// A file is only cut after a whole line, so each one reads on its own.
//
// Every file is made by safefile in the directory held open at Create: a
// name someone planted (a symbolic link, even one re-made during a cut) is
// replaced, never written through.
package rotate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// DefaultCount is how many files a rotated recording keeps when the
// caller says 0: a cut renames every kept file, so their number bounds
// what a cut costs (100 renames take about 3 ms).
const DefaultCount = 100

// file is what the writer needs of an *os.File (a test fails its writes).
type file interface {
	io.WriteCloser
	Truncate(size int64) error
}

// Writer is an io.WriteCloser of lines.
type Writer struct {
	dir   *safefile.Dir
	name  string // FILE's name in dir
	max   int64  // bytes a file may reach before the next line starts a new one; 0: no limit
	count int    // files kept, FILE included
	kept  int    // FILE.1 ... FILE.kept are this writer's
	f     file
	size  int64
	// lineEnd is where the current file's last whole line ends: a failed
	// write (a full disk) cuts the file back to it.
	lineEnd int64
	// atLineStart says the current file ends after a whole line.
	atLineStart bool
	err         error // the first write error, returned ever after
}

// Create starts FILE, mode 0600, given to owner (nil: this process's
// user): rotated past maxBytes when that is not 0, keeping count files
// (0: DefaultCount). FILE and the FILE.1 ... FILE.(count-1) of an earlier
// recording are replaced only if they are regular files of ours, and no
// other file is removed.
func Create(path string, maxBytes int64, count int, owner *safefile.Owner) (*Writer, error) {
	if count <= 0 {
		count = DefaultCount
	}
	dir, name, err := safefile.OpenParent(path, owner)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, name: name, max: maxBytes, count: count, atLineStart: true}
	last := 0 // the numbered files this recording will have
	if maxBytes > 0 {
		last = count - 1
	}
	// Nothing is removed unless all of it may be.
	for i := 0; i <= last; i++ {
		if err := dir.Check(w.numbered(i)); err != nil {
			dir.Close()
			return nil, fmt.Errorf("create %w", err)
		}
	}
	// An earlier recording's files would pass for this one's.
	for i := 1; i <= last; i++ {
		if err := dir.RemoveOld(w.numbered(i)); err != nil {
			dir.Close()
			return nil, err
		}
	}
	f, err := dir.Create(name)
	if err != nil {
		dir.Close()
		return nil, err
	}
	w.f = f
	return w, nil
}

func (w *Writer) numbered(i int) string {
	if i == 0 {
		return w.name
	}
	return w.name + "." + strconv.Itoa(i)
}

// Write writes p; a line that would begin past the limit begins a new
// file instead. After a failed write the file ends at its last whole
// line, and every later Write fails.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	written := 0
	for len(p) > 0 {
		if w.max > 0 && w.size >= w.max && w.atLineStart {
			if err := w.rotate(); err != nil {
				w.err = err
				return written, err
			}
		}
		chunk := p
		if w.max > 0 {
			// Up to the end of the line under way: the file may be cut after it.
			if i := bytes.IndexByte(p, '\n'); i >= 0 {
				chunk = p[:i+1]
			}
		}
		n, err := w.f.Write(chunk)
		written += n
		if i := bytes.LastIndexByte(chunk[:n], '\n'); i >= 0 {
			w.lineEnd = w.size + int64(i) + 1
		}
		w.size += int64(n)
		if n > 0 {
			w.atLineStart = chunk[n-1] == '\n'
		}
		if err != nil {
			w.err = w.cutBack(err)
			return written, w.err
		}
		p = p[n:]
	}
	return written, nil
}

// cutBack ends the file at its last whole line after err: a reader of the
// recording then meets no half an event at its end.
func (w *Writer) cutBack(err error) error {
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // the file is named once, below
	}
	err = fmt.Errorf("write %s: %w", w.dir.Path(w.name), err)
	if w.size > w.lineEnd {
		if terr := w.f.Truncate(w.lineEnd); terr != nil {
			return errors.Join(err, fmt.Errorf("cut %s back to its last whole line: %w", w.dir.Path(w.name), terr))
		}
		w.size, w.atLineStart = w.lineEnd, true
	}
	return err
}

// rotate shifts FILE.i to FILE.(i+1), the last one renamed over (dropped),
// and starts FILE anew: as many renames as files kept, at most count-1.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.dir.Path(w.name), err)
	}
	if w.count > 1 {
		for i := min(w.kept, w.count-2); i >= 0; i-- {
			if err := w.dir.Rename(w.numbered(i), w.numbered(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rotate: %w", err)
			}
		}
		w.kept = min(w.kept+1, w.count-1)
	}
	// FILE was ours and renamed away (with -W 1, replaced): whatever is
	// there now was planted, and is replaced.
	f, err := w.dir.Replace(w.name)
	if err != nil {
		return err
	}
	w.f, w.size, w.lineEnd, w.atLineStart = f, 0, 0, true
	return nil
}

// Close closes the current file.
func (w *Writer) Close() error {
	err := w.f.Close()
	w.dir.Close()
	return err
}
