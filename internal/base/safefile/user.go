package safefile

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// asUser runs file operations as another user: on one OS thread whose
// file-system uid and gid (setfsuid(2), setfsgid(2)), groups and
// file capabilities are that user's, so that the kernel checks every
// name it walks, file it creates and name it replaces as it would for
// that user. Credentials are per thread in Linux: the rest of the
// process stays root. The thread is never given back to Go's scheduler;
// it ends with its goroutine (runtime.LockOSThread without an unlock).
type asUser struct {
	calls chan func()
	uid   int
}

// startAsUser starts the thread that acts as o.
func startAsUser(o *Owner) (*asUser, error) {
	groups := groupsOf(o)
	u := &asUser{calls: make(chan func()), uid: o.UID}
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := become(o, groups); err != nil {
			started <- err
			return
		}
		started <- nil
		for call := range u.calls {
			call()
		}
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("act as uid %d, who ran sudo: %w", o.UID, err)
	}
	return u, nil
}

// do runs fn as the user; a nil asUser runs it with this process's
// credentials.
func (u *asUser) do(fn func() error) error {
	if u == nil {
		return fn()
	}
	done := make(chan error, 1)
	u.calls <- func() { done <- fn() }
	return <-done
}

// stop ends the thread.
func (u *asUser) stop() {
	if u != nil {
		close(u.calls)
	}
}

// become gives the calling thread o's identity for the file system.
func become(o *Owner, groups []int) error {
	// Raw system calls on this thread alone (x/sys/unix's, unlike the
	// syscall package's Setgroups, which changes every thread).
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if _, err := unix.SetfsgidRetGid(o.GID); err != nil {
		return fmt.Errorf("setfsgid: %w", err)
	}
	if _, err := unix.SetfsuidRetUid(o.UID); err != nil {
		return fmt.Errorf("setfsuid: %w", err)
	}
	// They return the previous id, and fail silently: ask again.
	if prev, _ := unix.SetfsgidRetGid(o.GID); prev != o.GID {
		return fmt.Errorf("setfsgid(%d) did not take (fsgid %d)", o.GID, prev)
	}
	if prev, _ := unix.SetfsuidRetUid(o.UID); prev != o.UID {
		return fmt.Errorf("setfsuid(%d) did not take (fsuid %d)", o.UID, prev)
	}
	return dropFileCaps()
}

// fileCaps are the capabilities that override the file system's
// permission checks: the kernel drops them from the effective set when
// the fsuid leaves 0 (CAP_FS_MASK), unless SECBIT_NO_SETUID_FIXUP says
// otherwise; they are dropped here whatever the securebits.
var fileCaps = []uint{unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_FSETID, unix.CAP_LINUX_IMMUTABLE, unix.CAP_MKNOD, unix.CAP_MAC_OVERRIDE}

func dropFileCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // Pid 0: this thread
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, c := range fileCaps {
		data[c/32].Effective &^= 1 << (c % 32)
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// groupsOf lists o's groups: its gid and its supplementary groups from
// the user database (/etc/group: rdmatrace is built without cgo); only
// the gid when the database does not know the user. Fewer groups than
// the user has can only refuse a file, never place one where the user
// may not.
func groupsOf(o *Owner) []int {
	groups := []int{o.GID}
	u, err := user.LookupId(strconv.Itoa(o.UID))
	if err != nil {
		return groups
	}
	ids, err := u.GroupIds()
	if err != nil {
		return groups
	}
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil && g != o.GID && g >= 0 {
			groups = append(groups, g)
		}
	}
	return groups
}

// refused says, after an error of the kernel's permission checks, that
// the file is made as the invoking user.
func refused(err error, o *Owner) error {
	if o != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		return fmt.Errorf("%w: files for the user who ran sudo are made as that user (uid %d), where that user may write", err, o.UID)
	}
	return err
}

// followable says why the symbolic link st, met on the way to an output
// file, is not followed, if it is not: only root's links and the
// follower's own are, where the follower is the user the file is made as.
// The kernel's protected_symlinks rule (fs.protected_symlinks) follows
// only such links, or the directory owner's, in a sticky world-writable
// directory; this applies it everywhere, whatever the sysctl, since any
// directory writable by others may hold a planted link.
func followable(st *unix.Stat_t, follower int) error {
	if st.Uid == 0 || int(st.Uid) == follower {
		return nil
	}
	whose := "root's"
	if follower != 0 {
		whose = "root's or uid " + strconv.Itoa(follower) + "'s"
	}
	return fmt.Errorf("is a symbolic link of uid %d: expected a directory, or a link of %s (another user's link is not followed)", st.Uid, whose)
}

// euid is this process's effective uid: the follower without an owner.
var euid = os.Geteuid
