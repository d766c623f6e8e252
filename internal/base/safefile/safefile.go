// Package safefile creates the files rdmatrace writes (recordings and
// their rotations, reports, ready files, dumps) so that root never writes
// through a name someone else planted: a new file, mode 0600, is made
// under a temporary name in a directory held open, then renamed over the
// name asked for. A rename replaces a symbolic link, a hard link or a
// FIFO at that name without opening it, so nothing outside the file we
// made is ever written, truncated or waited on.
//
// What the name held before is only replaced when it is a regular file of
// this user (or of the user the file is given to): another user's file, a
// directory, a device or a symbolic link is refused, and named.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Mode is every created file's mode, whatever the umask: recordings name
// every process that holds RDMA resources, and raw records hold kernel
// addresses.
const Mode = 0o600

// Owner is the user a created file is given to.
type Owner struct{ UID, GID int }

// Invoker is the user who ran `sudo rdmatrace`, from SUDO_UID and
// SUDO_GID, when rdmatrace runs as root; nil otherwise (root itself, or a
// user with capabilities, keeps its files), as tcpdump -Z gives its files
// to the user it runs as. getenv is os.Getenv but in tests.
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
// in even if the path now leads elsewhere.
type Dir struct {
	fd    int
	path  string
	owner *Owner
}

// Close lets the directory go; files created in it stay open.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is name's path, for messages.
func (d *Dir) Path(name string) string { return filepath.Join(d.path, name) }

// Create makes name a new empty file, mode 0600, open for writing. What
// name held is replaced only when it is a regular file of ours.
func (d *Dir) Create(name string) (*os.File, error) {
	if err := d.replaceable(name); err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	return d.Replace(name)
}

// Replace makes name a new empty file, mode 0600, whatever name held: for
// a name this writer made itself and just renamed away (a rotation), where
// anything found there since was planted.
func (d *Dir) Replace(name string) (*os.File, error) {
	f, tmp, err := d.temp(name)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		f.Close()
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return nil, fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	return f, nil
}

// WriteFile makes name a file holding data: it appears whole or not at
// all, as a script polling for a ready file must see it.
func (d *Dir) WriteFile(name string, data []byte) error {
	if err := d.replaceable(name); err != nil {
		return fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	f, tmp, err := d.temp(name)
	if err != nil {
		return fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("write %s: %w", d.Path(name), err)
	}
	return nil
}

// Rename renames old to new within the directory; a link at new is
// replaced, never followed.
func (d *Dir) Rename(old, new string) error {
	if err := unix.Renameat(d.fd, old, d.fd, new); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Path(old), New: d.Path(new), Err: err}
	}
	return nil
}

// Check says why name may not be replaced or removed, if it may not:
// only a regular file of ours (or none) may.
func (d *Dir) Check(name string) error {
	if err := d.replaceable(name); err != nil {
		return fmt.Errorf("%s: %w", d.Path(name), err)
	}
	return nil
}

// RemoveOld removes name, a file an earlier run of ours left, once Check
// allowed it; none there is fine.
func (d *Dir) RemoveOld(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.Path(name), Err: err}
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
	if int(st.Uid) != os.Geteuid() && (d.owner == nil || int(st.Uid) != d.owner.UID) {
		return fmt.Errorf("exists and belongs to uid %d, not to this user", st.Uid)
	}
	return nil
}

// temp creates a new file of ours beside name, mode 0600, given to the
// owner.
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
		if d.owner != nil {
			// Where root may not give files away (NFS with root_squash),
			// the file stays root's: as safe, only less handy.
			_ = unix.Fchown(fd, d.owner.UID, d.owner.GID)
		}
		return os.NewFile(uintptr(fd), d.Path(name)), tmp, nil
	}
	return nil, "", errors.New("no free temporary name")
}

// Create makes path a new empty file, mode 0600, given to owner (nil: this
// process's user), replacing only a regular file of ours.
func Create(path string, owner *Owner) (*os.File, error) {
	d, name, err := OpenParent(path, owner)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Create(name)
}

// WriteFile makes path a file holding data, mode 0600, given to owner:
// it appears whole, replacing only a regular file of ours.
func WriteFile(path string, data []byte, owner *Owner) error {
	d, name, err := OpenParent(path, owner)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data)
}

// OpenParent holds the directory of path, which must name a file, and
// returns the file's name in it. Files created there are given to owner
// (nil: they stay this process's user's).
func OpenParent(path string, owner *Owner) (d *Dir, name string, err error) {
	if path == "" || os.IsPathSeparator(path[len(path)-1]) {
		return nil, "", fmt.Errorf("create %s: expected a file name, not a directory", path)
	}
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("create %s: %w", path, err)
	}
	return &Dir{fd: fd, path: dir, owner: owner}, filepath.Base(path), nil
}
