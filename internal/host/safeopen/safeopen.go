// Package safeopen opens, for reading, files that other users' processes
// name: the files a traced process maps, which root then parses. The name
// a process's memory map gives is the user's to choose: a path with links
// in it, a FIFO or a device node left where a deleted file was. So a file
// is opened as mapped (/proc/PID/map_files), or by a path with no link in
// it, first without opening it at all (O_PATH: no device's open, no
// FIFO's wait), and then for reading only once it is known to be a
// regular file with the inode expected.
package safeopen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Identity is what a file is expected to be: its inode, and the device
// as a memory map gives it ("08:01"; "" when not known).
type Identity struct {
	Dev string
	Ino uint64
}

// Mapped opens the file process pid maps at [start, end) through
// /proc/PID/map_files/START-END: the inode that is mapped, whatever its
// name says now (a deleted file's too), with no path walked. It must be a
// regular file with the inode (and device) of want, as the maps line
// said: a process's maps can change between the line and the open.
func Mapped(proc string, pid uint32, start, end uint64, want Identity) (*os.File, error) {
	p := filepath.Join(proc, strconv.FormatUint(uint64(pid), 10), "map_files", fmt.Sprintf("%x-%x", start, end))
	// The last component is the kernel's link to the mapped file: it is
	// followed (O_NOFOLLOW would open the link), and it leads nowhere
	// else.
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return reopen(fd, p, want)
}

// Path opens path in this process's root, refusing a symbolic link
// anywhere in it (kernels before 5.6, without openat2: in its last
// component only). It must be a regular file, with want's inode (and
// device) when want.Ino is not 0.
func Path(path string, want Identity) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if errors.Is(err, unix.ELOOP) {
		err = errors.New("a symbolic link in the path (not followed)")
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return reopen(fd, path, want)
}

// Regular opens path, following links (a root-owned tree's: the dynamic
// linker's directories, /usr/lib/debug), if it is a regular file: never a
// FIFO's wait nor a device's open.
func Regular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return reopen(fd, path, Identity{})
}

// reopen checks what the O_PATH descriptor fd is, then opens it for
// reading through /proc/self/fd: the same inode, not a path walked again.
func reopen(fd int, name string, want Identity) (*os.File, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if err := check(fd, &st, want); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(rfd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(rfd)
		return nil, fmt.Errorf("%s: changed while it was opened", name)
	}
	return os.NewFile(uintptr(rfd), name), nil
}

// ErrNotRegular is a file that is not a regular file (a FIFO, a device, a
// directory, a socket): never opened for reading.
var ErrNotRegular = errors.New("not a regular file")

// check says whether the file st describes is what is wanted.
func check(fd int, st *unix.Stat_t, want Identity) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w (%s)", ErrNotRegular, kind(st.Mode))
	}
	if want.Ino != 0 && st.Ino != want.Ino {
		return fmt.Errorf("inode %d, expected %d: another file than the one mapped", st.Ino, want.Ino)
	}
	if want.Dev != "" {
		if dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)); dev != want.Dev && !overlay(fd) {
			// An overlay's maps give the overlay's device, a file the
			// layer's: the inode alone is compared there.
			return fmt.Errorf("device %s, expected %s: another file than the one mapped", dev, want.Dev)
		}
	}
	return nil
}

func overlay(fd int) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == unix.OVERLAYFS_SUPER_MAGIC
}

func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "mode " + strconv.FormatUint(uint64(mode), 8)
}
