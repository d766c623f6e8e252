package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// createPrivate opens path for writing, mode 0600: a new file, or an
// existing regular file that this user owns, truncated. It never follows a
// symbolic link nor opens a FIFO or device (which could block, or send
// kernel addresses elsewhere).
func createPrivate(path string) (*os.File, error) {
	const flags = unix.O_WRONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL, 0o600)
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Open(path, flags, 0)
		if err == nil {
			if err = checkOwnRegular(fd); err == nil {
				err = unix.Ftruncate(fd, 0)
			}
			if err == nil {
				err = unix.Fchmod(fd, 0o600)
			}
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	if errors.Is(err, unix.ELOOP) {
		err = errors.New("is a symbolic link")
	}
	if errors.Is(err, unix.ENXIO) {
		err = errors.New("not a regular file")
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	// Back to blocking writes: O_NONBLOCK only guarded the open.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

func checkOwnRegular(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return errors.New("exists and is not a regular file")
	}
	if st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("exists and belongs to uid %d, not to this user", st.Uid)
	}
	return nil
}
