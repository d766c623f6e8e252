// Package safefile creates the files rdmatrace writes (recordings and
// their rotations, reports, ready files, dumps) so that root never writes
// through a name someone else planted: a new file, mode 0600, is made
// under a temporary name in a directory held open, then renamed over the
// name asked for. A rename replaces a symbolic link, a hard link or a
// FIFO at that name without opening it, so nothing outside the file we
// made is ever written, truncated or waited on.
//
// The directory is reached one name at a time: a symbolic link on the way
// is followed only when it is root's or the file's user's own, so a link
// another user planted in a parent directory leads nowhere.
//
// Under sudo (an Owner), every step is taken with the invoking user's
// credentials (setfsuid on a thread of its own): the directory must be
// one that user may reach and write, the file is made that user's, and
// only a regular file of that user's is replaced. A user allowed `sudo
// rdmatrace` and nothing more gets no file where they could not have
// made one. Without an Owner the files are this process's user's.
//
// What the name held before is only replaced when it is a regular file of
// the user the file is for: another user's file, a directory, a device or
// a symbolic link is refused, and named.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mode is every created file's mode, whatever the umask: recordings name
// every process that holds RDMA resources, and raw records hold kernel
// addresses.
const Mode = 0o600

// Owner is the user a created file is made as, and belongs to.
type Owner struct{ UID, GID int }

// Invoker is the user who ran `sudo rdmatrace`, from SUDO_UID and
// SUDO_GID, when rdmatrace runs as root; nil otherwise (root itself, or a
// user with capabilities, keeps its files). Files for the invoker are
// made as the invoker, as tcpdump -Z opens its files as the user it runs
// as: only where that user may write. getenv is os.Getenv but in tests.
func Invoker(getenv func(string) string) *Owner {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, err := strconv.Atoi(getenv("SUDO_UID"))
	if err != nil || uid <= 0 {
		return nil
	}
	gid, err := strconv.Atoi(getenv("SUDO_GID"))
	if err != nil || gid < 0 {
		gid = uid
	}
	return &Owner{UID: uid, GID: gid}
}

// Dir is a directory held open: names in it are created, renamed and
// removed relative to it, so a rotation keeps to the directory it began
// in even if the path now leads elsewhere. With an owner, every call on
// it runs as that user.
type Dir struct {
	fd    int
	path  string
	owner *Owner
	as    *asUser // nil: this process's credentials
}

// Close lets the directory go; files created in it stay open.
func (d *Dir) Close() error {
	d.as.stop()
	return unix.Close(d.fd)
}

// Path is name's path, for messages.
func (d *Dir) Path(name string) string { return filepath.Join(d.path, name) }

// uid is the user whose files may be replaced: the owner, else this
// process's.
func (d *Dir) uid() int {
	if d.owner != nil {
		return d.owner.UID
	}
	return euid()
}

// Create makes name a new empty file, mode 0600, open for writing. What
// name held is replaced only when it is a regular file of the file's
// user.
func (d *Dir) Create(name string) (*os.File, error) {
	var f *os.File
	err := d.as.do(func() (err error) {
		if err := d.replaceable(name); err != nil {
			return err
		}
		f, err = d.replace(name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), refused(err, d.owner))
	}
	return f, nil
}

// Replace makes name a new empty file, mode 0600, whatever name held: for
// a name this writer made itself and just renamed away (a rotation), where
// anything found there since was planted.
func (d *Dir) Replace(name string) (*os.File, error) {
	var f *os.File
	err := d.as.do(func() (err error) {
		f, err = d.replace(name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), refused(err, d.owner))
	}
	return f, nil
}

func (d *Dir) replace(name string) (*os.File, error) {
	f, tmp, err := d.temp(name)
	if err != nil {
		return nil, err
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		f.Close()
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return nil, err
	}
	return f, nil
}

// WriteFile makes name a file holding data: it appears whole or not at
// all, as a script polling for a ready file must see it.
func (d *Dir) WriteFile(name string, data []byte) error {
	op := "create"
	err := d.as.do(func() error {
		if err := d.replaceable(name); err != nil {
			return err
		}
		f, tmp, err := d.temp(name)
		if err != nil {
			return err
		}
		op = "write"
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = unix.Renameat(d.fd, tmp, d.fd, name)
		}
		if err != nil {
			_ = unix.Unlinkat(d.fd, tmp, 0)
		}
		return err
	})
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // the file is named once, below
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, d.Path(name), refused(err, d.owner))
	}
	return nil
}

// Rename renames old to new within the directory; a link at new is
// replaced, never followed.
func (d *Dir) Rename(old, new string) error {
	if err := d.as.do(func() error { return unix.Renameat(d.fd, old, d.fd, new) }); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Path(old), New: d.Path(new), Err: refused(err, d.owner)}
	}
	return nil
}

// Check says why name may not be replaced or removed, if it may not:
// only a regular file of the file's user (or none) may.
func (d *Dir) Check(name string) error {
	if err := d.as.do(func() error { return d.replaceable(name) }); err != nil {
		return fmt.Errorf("%s: %w", d.Path(name), err)
	}
	return nil
}

// RemoveOld removes name, a file an earlier run of ours left, once Check
// allowed it; none there is fine.
func (d *Dir) RemoveOld(name string) error {
	err := d.as.do(func() error { return unix.Unlinkat(d.fd, name, 0) })
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.Path(name), Err: refused(err, d.owner)}
	}
	return nil
}

// replaceable says why name may not be replaced, if it may not.
func (d *Dir) replaceable(name string) error {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return errors.New("is a symbolic link: expected a regular file or none")
	case unix.S_IFDIR:
		return errors.New("is a directory: expected a regular file or none")
	default:
		return errors.New("exists and is not a regular file")
	}
	if uid := d.uid(); int(st.Uid) != uid {
		if d.owner != nil {
			return fmt.Errorf("exists and belongs to uid %d, not to uid %d who ran sudo: only a file of theirs is replaced", st.Uid, uid)
		}
		return fmt.Errorf("exists and belongs to uid %d, not to this user", st.Uid)
	}
	return nil
}

// temp creates a new file beside name, mode 0600: the owner's, as it is
// made with the owner's credentials.
func (d *Dir) temp(name string) (*os.File, string, error) {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for range 100 {
		var r [6]byte
		_, _ = rand.Read(r[:])
		// Hidden, and never of the form NAME.<n> that a rotation numbers.
		tmp := "." + name + ".tmp-" + hex.EncodeToString(r[:])
		fd, err := unix.Openat(d.fd, tmp, flags, Mode)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if errors.Is(err, unix.ENAMETOOLONG) {
			// A name near NAME_MAX leaves no room for the suffix.
			tmp = ".rdmatrace-tmp-" + hex.EncodeToString(r[:])
			fd, err = unix.Openat(d.fd, tmp, flags, Mode)
		}
		if err != nil {
			return nil, "", err
		}
		// The umask may have taken bits the owner needs: exactly 0600.
		if err := unix.Fchmod(fd, Mode); err != nil {
			unix.Close(fd)
			_ = unix.Unlinkat(d.fd, tmp, 0)
			return nil, "", err
		}
		return os.NewFile(uintptr(fd), d.Path(name)), tmp, nil
	}
	return nil, "", errors.New("no free temporary name")
}

// Create makes path a new empty file, mode 0600, as owner (nil: this
// process's user), replacing only a regular file of that user's.
func Create(path string, owner *Owner) (*os.File, error) {
	d, name, err := OpenParent(path, owner)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Create(name)
}

// WriteFile makes path a file holding data, mode 0600, as owner: it
// appears whole, replacing only a regular file of that user's.
func WriteFile(path string, data []byte, owner *Owner) error {
	d, name, err := OpenParent(path, owner)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data)
}

// OpenParent holds the directory of path, which must name a file, and
// returns the file's name in it. Files created there are owner's, made
// with owner's credentials (nil: this process's user's); the directory is
// reached as owner too.
func OpenParent(path string, owner *Owner) (d *Dir, name string, err error) {
	if path == "" || os.IsPathSeparator(path[len(path)-1]) {
		return nil, "", fmt.Errorf("create %s: expected a file name, not a directory", path)
	}
	name = filepath.Base(path)
	if name == "." || name == ".." {
		return nil, "", fmt.Errorf("create %s: expected a file name, not a directory", path)
	}
	d, err = openDir(filepath.Dir(path), owner, false)
	if err != nil {
		return nil, "", fmt.Errorf("create %s: %w", path, err)
	}
	return d, name, nil
}

// MkdirAll makes the directory path and those above it that are missing
// (mode 0755 less the umask), as owner, and reaches it as OpenParent
// does: a directory to hold files made later with WriteFile or Create.
func MkdirAll(path string, owner *Owner) error {
	d, err := openDir(path, owner, true)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	return d.Close()
}

// openDir holds dir, reached as owner (nil: this process's user), making
// what is missing when create is set.
func openDir(dir string, owner *Owner, create bool) (*Dir, error) {
	d := &Dir{fd: -1, path: dir, owner: owner}
	follower := euid()
	if owner != nil {
		var err error
		if d.as, err = startAsUser(owner); err != nil {
			return nil, err
		}
		follower = owner.UID
	}
	err := d.as.do(func() (err error) {
		d.fd, err = walk(dir, follower, create)
		return err
	})
	if err != nil {
		d.as.stop()
		return nil, refused(err, owner)
	}
	return d, nil
}

// maxLinks bounds the symbolic links one walk follows, as the kernel's
// MAXSYMLINKS does.
const maxLinks = 40

// walk opens dir for the *at calls one name at a time (O_PATH|O_NOFOLLOW):
// a symbolic link is followed only when followable says so. It runs with
// the credentials of the user the files are for, who must be allowed to
// reach every directory on the way; with create, missing directories are
// made.
func walk(dir string, follower int, create bool) (int, error) {
	const how = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	at := "."
	if filepath.IsAbs(dir) {
		at = "/"
	}
	fd, err := unix.Open(at, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: at, Err: err}
	}
	todo := names(dir)
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		here := filepath.Join(at, name)
		next, err := unix.Openat(fd, name, how, 0)
		if errors.Is(err, unix.ENOENT) && create && name != ".." {
			if err = unix.Mkdirat(fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, name, how, 0)
			}
		}
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: here, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: here, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(fd)
			fd, at = next, here
			continue
		case unix.S_IFLNK:
		default:
			unix.Close(next)
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", here, unix.ENOTDIR)
		}
		target, err := readLink(next, &st)
		unix.Close(next)
		if err == nil {
			err = followable(&st, follower)
		}
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s %w", here, err)
		}
		if links++; links > maxLinks {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: here, Err: unix.ELOOP}
		}
		if filepath.IsAbs(target) {
			root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: "/", Err: err}
			}
			fd, at = root, "/"
		}
		todo = append(names(target), todo...)
	}
	return fd, nil
}

// names splits a path into the names to walk, without empty ones and ".".
func names(path string) []string {
	var out []string
	for _, n := range strings.Split(path, "/") {
		if n != "" && n != "." {
			out = append(out, n)
		}
	}
	return out
}

// readLink reads the symbolic link open at fd (O_PATH|O_NOFOLLOW).
func readLink(fd int, st *unix.Stat_t) (string, error) {
	buf := make([]byte, min(max(st.Size+1, 64), 4097))
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", fmt.Errorf("is a symbolic link that cannot be read: %w", err)
	}
	if n >= len(buf) {
		return "", errors.New("is a symbolic link too long to follow")
	}
	return string(buf[:n]), nil
}
