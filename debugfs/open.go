package debugfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/rdmatrace/rdmatrace/internal/base/decompress"
)

// Input is one thing to read: a file, or standard input.
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// Stdin is the name records from standard input carry.
const Stdin = "<stdin>"

// SkipError says why a file was not read. It is a note for the user, not a
// failure: the file holds no saved state, or reading it could block.
type SkipError struct {
	Path string
	Why  string
}

// Error names the file as it is: the caller escapes what it prints, once.
func (e *SkipError) Error() string { return "skipped " + e.Path + ": " + e.Why }

// Inputs lists what a command-line path stands for: "-" is stdin, a file
// is itself, and a directory (a support bundle, or /sys/kernel/debug
// itself) stands for the files in its tree that hold RDMA state: every
// file in a directory named rdma_cm, and any other file whose first line
// is a legacy header, an `rdma res show` line or `rdma -j` JSON. Other
// files are skipped: a bundle holds much else. Symbolic links are not
// followed, and only regular files are read.
//
// A live system's pseudo-filesystems hold files that block a reader for
// ever (tracefs trace_pipe, /proc/kmsg), that another reader consumes, or
// tens of thousands of files that are no saved state (tracefs events/,
// /proc/PID/). So the walk stays on the directory's filesystem (st_dev),
// and under a debugfs, tracefs, procfs or sysfs root it enters only
// directories named rdma_cm: where the legacy dumps live. Every file is
// opened non-blocking and read only when fstat says it is a regular file,
// and a read that would block ends it. What the walk skips for those
// reasons (FIFOs, sockets, devices, other filesystems) comes back as
// *SkipError in the returned error (joined with errors.Join, with the
// real failures), so the caller can tell the user.
//
// A file compressed with gzip, xz, zstd or bzip2 (rdma-res.txt.gz) is
// recognised and read by its content, decompressed up to
// decompress.DefaultLimit bytes (InputsMax chooses another limit).
func Inputs(path string, stdin io.Reader) ([]Input, error) {
	return InputsMax(path, stdin, 0)
}

// InputsMax is Inputs with compressed files read up to maxInput bytes once
// decompressed (decompress.DefaultLimit when 0).
func InputsMax(path string, stdin io.Reader, maxInput int64) ([]Input, error) {
	if path == "-" {
		return []Input{{Name: Stdin, Open: func() (io.ReadCloser, error) {
			return decompressed(Stdin, io.NopCloser(stdin), nil, maxInput)
		}}}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []Input{{Name: path, Open: func() (io.ReadCloser, error) {
			f, err := openNamed(path)
			return decompressed(path, f, err, maxInput)
		}}}, nil
	}
	kind := fsKindOf(path)
	dev := devOf(st)
	// One unreadable file or directory must not hide the rest of a
	// bundle: errors are collected and the walk goes on.
	var out []Input
	var errs []error
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			if d != nil && d.IsDir() && p != path {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p == path {
				return nil
			}
			if kind == fsLive && d.Name() != "rdma_cm" {
				return fs.SkipDir // only rdma_cm holds RDMA state there
			}
			info, err := d.Info()
			if err != nil {
				errs = append(errs, err)
				return fs.SkipDir
			}
			if devOf(info) != dev {
				errs = append(errs, &SkipError{p, "another filesystem is mounted there (name it to read it)"})
				return fs.SkipDir
			}
			return nil
		}
		inRdmaCM := filepath.Base(filepath.Dir(p)) == "rdma_cm"
		if kind == fsLive && !inRdmaCM {
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return nil
		case !t.IsRegular():
			errs = append(errs, &SkipError{p, "not a regular file (" + typeName(t) + ")"})
			return nil
		}
		if inRdmaCM {
			out = append(out, walkedInput(p, maxInput))
			return nil
		}
		if ok, err := holdsRDMAState(p); err != nil {
			errs = append(errs, err)
		} else if ok {
			out = append(out, walkedInput(p, maxInput))
		}
		return nil
	})
	return out, errors.Join(errs...)
}

// fsKind is what Inputs needs to know of a filesystem.
type fsKind uint8

const (
	fsRegular fsKind = iota
	fsLive           // debugfs, tracefs, procfs, sysfs: read rdma_cm/ only
)

// Magic numbers of statfs(2) (include/uapi/linux/magic.h).
const (
	debugfsMagic = 0x64626720
	tracefsMagic = 0x74726163
	procMagic    = 0x9fa0
	sysfsMagic   = 0x62656572
)

func fsKindOf(path string) fsKind {
	var s syscall.Statfs_t
	if syscall.Statfs(path, &s) != nil {
		return fsRegular
	}
	switch s.Type {
	case debugfsMagic, tracefsMagic, procMagic, sysfsMagic:
		return fsLive
	}
	return fsRegular
}

func devOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

// walkedInput is a file found by a walk: checked again when opened, as
// it may have been replaced since.
func walkedInput(p string, maxInput int64) Input {
	return Input{Name: p, Open: func() (io.ReadCloser, error) {
		f, err := openRegular(p)
		if err != nil {
			return nil, err // not a nil *rawFile in a non-nil interface
		}
		return decompressed(p, f, nil, maxInput)
	}}
}

// decompressed is what f holds, decompressed when it is compressed; it
// closes f when it is closed, or at once on an error.
func decompressed(name string, f io.ReadCloser, err error, maxInput int64) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	r, _, err := decompress.NewReader(f, maxInput)
	if err != nil {
		f.Close()
		return nil, readError(name, err)
	}
	return both{r, f}, nil
}

// both is a decoder over a file: closing it closes the two.
type both struct {
	io.ReadCloser
	f io.Closer
}

func (b both) Close() error {
	b.ReadCloser.Close()
	return b.f.Close()
}

// openRegular opens p without blocking (a FIFO's open waits for a writer)
// and returns it only when it is a regular file; otherwise a *SkipError.
// Reads of the file never block either: a file that would is a stream.
func openRegular(p string) (*rawFile, error) {
	fd, mode, err := openNonBlocking(p)
	if err != nil {
		return nil, err
	}
	if !mode.IsRegular() {
		syscall.Close(fd)
		return nil, &SkipError{p, "not a regular file (" + typeName(mode) + ")"}
	}
	return &rawFile{fd: fd, name: p}, nil
}

// openNonBlocking opens p with O_NONBLOCK and says what fstat found there.
func openNonBlocking(p string) (int, fs.FileMode, error) {
	const flags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC | syscall.O_NOCTTY
	fd, err := syscall.Open(p, flags, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(p, flags, 0)
	}
	if err != nil {
		return -1, 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	return fd, modeOf(st.Mode), nil
}

func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	}
	return fs.ModeIrregular
}

// openNamed opens a file named on the command line. A regular file is read
// as a walked one is; a FIFO or terminal the user named (`parse <(zcat
// dump.gz)`) is then read as it comes, blocking: that is what was asked
// for. The open itself never blocks, and a FIFO without a writer reads as
// empty.
func openNamed(p string) (io.ReadCloser, error) {
	fd, mode, err := openNonBlocking(p)
	switch {
	case err != nil:
		return nil, err
	case mode.IsRegular():
		return &rawFile{fd: fd, name: p}, nil
	case mode&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0:
		if err := syscall.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "fcntl", Path: p, Err: err}
		}
		return &rawFile{fd: fd, name: p}, nil
	}
	syscall.Close(fd)
	return nil, &SkipError{p, "not a regular file (" + typeName(mode) + ")"}
}

// rawFile reads a file descriptor opened non-blocking, outside Go's
// poller: os.File would park a read that gets EAGAIN until data comes,
// which for trace_pipe is for ever. EAGAIN is an error here.
type rawFile struct {
	fd   int
	name string
}

func (f *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, &SkipError{f.name, "a stream: reading it would block"}
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *rawFile) Close() error { return syscall.Close(f.fd) }

func holdsRDMAState(p string) (bool, error) {
	f, err := openRegular(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	// Compressed files are told by what they decompress to.
	r, format, err := decompress.NewReader(f, 4096)
	if err != nil {
		return false, &SkipError{p, err.Error()}
	}
	defer r.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(r, head)
	switch {
	case err == nil || err == io.EOF || err == io.ErrUnexpectedEOF:
	case format != "" && n > 0:
		// Truncated or corrupt further on: what it holds is told by its
		// start, and the read says what is wrong.
	case format != "":
		return false, &SkipError{p, err.Error()}
	default:
		return false, err
	}
	return Recognize(head[:n]), nil
}

// utf8BOM is what some Windows tools put before a text file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// Recognize reports whether the start of a file is RDMA state this package
// reads: a legacy header (after any grep prefix or head separator), an
// `rdma res show cm_id|qp` text line, or `rdma -j` output.
func Recognize(head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		t = bytes.TrimLeft(t[1:], " \t\r\n")
		return bytes.HasPrefix(t, []byte(`{"ifindex":`)) || bytes.HasPrefix(t, []byte(`]`))
	}
	rd := NewReader(bytes.NewReader(nil), "")
	for len(t) > 0 {
		line, rest, _ := bytes.Cut(t, []byte("\n"))
		t = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if _, ok := headTailSeparator(line); ok {
			continue
		}
		if _, body, ok := grepPrefix(line); ok {
			line = body
		}
		rd.split(line)
		switch {
		case len(rd.cells) == 0:
			continue
		case isHeader(rd.cells):
			return true
		case string(rd.cells[0]) == "link" && len(rd.cells) > 1 && bytes.IndexByte(rd.cells[1], '/') > 0:
			return true
		}
		return false
	}
	return false
}
