package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

func write(p string) error {
	f, err := Create(p, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("new")
	return err
}

func TestCreateMakesOwnerOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	t.Run("a new file is 0600 whatever the umask", func(t *testing.T) {
		for _, umask := range []int{0, 0o277} {
			old := syscall.Umask(umask)
			p := filepath.Join(dir, "new.raw")
			err := write(p)
			syscall.Umask(old)
			if err != nil {
				t.Fatal(err)
			}
			if m := mode(t, p); m != 0o600 {
				t.Errorf("umask %#o: mode %v, want -rw-------", umask, m)
			}
		}
	})
	t.Run("an existing file of ours is replaced by a 0600 one", func(t *testing.T) {
		p := filepath.Join(dir, "old.raw")
		os.WriteFile(p, []byte("older and longer"), 0o644)
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "new" {
			t.Errorf("content %q, want %q", b, "new")
		}
		if m := mode(t, p); m != 0o600 {
			t.Errorf("mode %v, want -rw-------", m)
		}
	})
	t.Run("no temporary file is left", func(t *testing.T) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	})
}

// What a name holds is replaced only when it is a regular file of ours;
// nothing it leads to is touched.
func TestCreateRefusesWhatIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	for _, tc := range []struct {
		name, want string
		make       func(p string) error
	}{
		{"a symbolic link to a file", "symbolic link", func(p string) error { return os.Symlink(victim, p) }},
		{"a dangling symbolic link", "symbolic link", func(p string) error { return os.Symlink(filepath.Join(dir, "target"), p) }},
		{"a FIFO, without blocking", "not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o666) }},
		{"a directory", "is a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"another user's file", "belongs to uid 65534", func(p string) error {
			if os.Geteuid() != 0 {
				t.Skip("needs root to make a file of another user")
			}
			if err := os.WriteFile(p, []byte("theirs"), 0o666); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			os.WriteFile(victim, []byte("secret\n"), 0o600)
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			for what, try := range map[string]func() error{
				"Create":    func() error { return write(p) },
				"WriteFile": func() error { return WriteFile(p, []byte("ready\n"), nil) },
			} {
				err := try()
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
					t.Errorf("%s = %v, want an error naming %s and saying %q", what, err, p, tc.want)
				}
			}
			if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
				t.Errorf("the link's target now holds %q", b)
			}
			if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
				t.Error("the dangling link's target was created")
			}
		})
	}
}

// Replace (a rotation's new file) replaces whatever was planted at the
// name, and never writes through it.
func TestReplaceReplacesAPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("secret\n"), 0o600)
	os.Symlink(victim, filepath.Join(dir, "rec"))
	d, name, err := OpenParent(filepath.Join(dir, "rec"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.Replace(name)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("recorded\n")
	f.Close()
	if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
		t.Errorf("the victim holds %q", b)
	}
	if m := mode(t, filepath.Join(dir, "rec")); m != 0o600 {
		t.Errorf("rec: mode %v, want a regular -rw-------", m)
	}
}

// WriteFile's content appears whole: a reader never sees the file empty.
func TestWriteFileAppearsWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ready")
	if err := WriteFile(p, []byte("123\nclock-offset 5\n"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "123\nclock-offset 5\n" {
		t.Errorf("ready holds %q", b)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("mode %v, want -rw-------", m)
	}
}

func TestErrorsNameTheFile(t *testing.T) {
	for _, p := range []string{filepath.Join(t.TempDir(), "no", "such", "dir"), t.TempDir() + "/"} {
		if _, err := Create(p, nil); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Create(%q) = %v, want an error naming it", p, err)
		}
	}
}

// reachable makes a directory that every user may reach (t.TempDir's
// parent is root's alone), owned by uid:gid with mode perm, and removes
// it after the test.
func reachable(t *testing.T, uid, gid int, perm os.FileMode) string {
	t.Helper()
	top, err := os.MkdirTemp("", "safefile-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

func owned(t *testing.T, p string) (uid, gid uint32, mode os.FileMode) {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return s.Uid, s.Gid, st.Mode()
}

// Under sudo the files go to the user who ran it, made as that user, as
// tcpdump -Z opens its files as its user; a file of theirs is replaced.
func TestFilesGoToTheInvokingUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	env := map[string]string{"SUDO_UID": "65534", "SUDO_GID": "65533"}
	owner := Invoker(func(k string) string { return env[k] })
	if owner == nil || *owner != (Owner{65534, 65533}) {
		t.Fatalf("Invoker = %v, want 65534:65533", owner)
	}
	if o := Invoker(func(string) string { return "" }); o != nil {
		t.Errorf("Invoker without sudo = %v, want nil", o)
	}
	if o := Invoker(func(k string) string { return map[string]string{"SUDO_UID": "0"}[k] }); o != nil {
		t.Errorf("Invoker when root ran sudo = %v, want nil", o)
	}
	p := filepath.Join(reachable(t, 65534, 65533, 0o755), "rec")
	for range 2 { // the second time replaces the invoker's file
		f, err := Create(p, owner)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if uid, gid, m := owned(t, p); uid != 65534 || gid != 65533 || m != 0o600 {
		t.Errorf("rec: uid %d gid %d mode %v, want 65534 65533 -rw-------", uid, gid, m)
	}
	dir := filepath.Join(filepath.Dir(p), "nl", "replies")
	if err := MkdirAll(dir, owner); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "01-cmd1.nl"), []byte("x"), owner); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{filepath.Dir(dir), dir, filepath.Join(dir, "01-cmd1.nl")} {
		if uid, _, _ := owned(t, q); uid != 65534 {
			t.Errorf("%s: uid %d, want the invoker's 65534", q, uid)
		}
	}
}

// A user allowed `sudo rdmatrace` alone gets no file where they could not
// have made one: a directory only root may write is refused (the kernel's
// check, as the user), and a file of root's at the name is not replaced,
// even in a directory the user may write.
func TestTheInvokerGetsNoFileTheyCouldNotHaveMade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	owner := &Owner{UID: 65534, GID: 65534}
	t.Run("a directory only root may write", func(t *testing.T) {
		dir := reachable(t, 0, 0, 0o755)
		p := filepath.Join(dir, "ld.so.preload")
		_, err := Create(p, owner)
		if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("Create = %v, want permission denied, naming %s and the user", err, p)
		}
		if err := WriteFile(p, []byte("ready\n"), owner); err == nil {
			t.Error("WriteFile made a ready file where the user may not write")
		}
		if err := MkdirAll(filepath.Join(dir, "nl"), owner); err == nil {
			t.Error("MkdirAll made a directory where the user may not write")
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("left in the directory: %v", ents)
		}
	})
	t.Run("a directory the user may not reach", func(t *testing.T) {
		dir := filepath.Join(reachable(t, 0, 0, 0o700), "sub")
		os.Mkdir(dir, 0o777)
		if _, err := Create(filepath.Join(dir, "rec"), owner); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Create under a directory of root's 0700 = %v, want permission denied", err)
		}
	})
	for _, perm := range []os.FileMode{0o777, 0o1777} {
		t.Run(fmt.Sprintf("a file of root's in a directory of mode %o", perm), func(t *testing.T) {
			p := filepath.Join(reachable(t, 0, 0, perm), "shadow")
			if err := os.WriteFile(p, []byte("root:$6$...:19000::::::\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			_, err := Create(p, owner)
			if err == nil || !strings.Contains(err.Error(), "belongs to uid 0") {
				t.Errorf("Create = %v, want a refusal: the file is root's", err)
			}
			if uid, _, m := owned(t, p); uid != 0 || m != 0o640 {
				t.Errorf("shadow is now uid %d mode %v, want root's 0640 untouched", uid, m)
			}
		})
	}
	t.Run("root's own files stay root's", func(t *testing.T) {
		p := filepath.Join(reachable(t, 0, 0, 0o755), "rec")
		f, err := Create(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if uid, _, m := owned(t, p); uid != 0 || m != 0o600 {
			t.Errorf("rec: uid %d mode %v, want root's 0600", uid, m)
		}
	})
}

// A symbolic link in a parent directory is followed only when it is
// root's or the user's the file is for: another user's, which they could
// have planted in any directory they may write, is refused and named.
func TestParentLinksOfOtherUsersAreNotFollowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make links of another user")
	}
	shared := reachable(t, 0, 0, 0o1777) // as /tmp
	target := reachable(t, 0, 0, 0o755)  // as /etc
	link := func(t *testing.T, name string, uid int, to string) string {
		t.Helper()
		p := filepath.Join(shared, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	planted := link(t, "planted", 65534, target)
	for _, owner := range []*Owner{nil, {UID: 1000, GID: 1000}} {
		p := filepath.Join(planted, "passwd")
		os.WriteFile(filepath.Join(target, "passwd"), []byte("root:x:0:0\n"), 0o644)
		_, err := Create(p, owner)
		if err == nil || !strings.Contains(err.Error(), planted+" is a symbolic link of uid 65534") {
			t.Errorf("owner %v: Create through another user's link = %v, want a refusal naming %s", owner, err, planted)
		}
		if b, _ := os.ReadFile(filepath.Join(target, "passwd")); string(b) != "root:x:0:0\n" {
			t.Errorf("owner %v: written through the planted link: %q", owner, b)
		}
		if err := WriteFile(filepath.Join(planted, "ready"), nil, owner); err == nil {
			t.Errorf("owner %v: WriteFile followed the planted link", owner)
		}
	}
	// A dangling link, and one in a link's target: refused the same way.
	deeper := link(t, "deeper", 0, filepath.Join(shared, "planted", "x"))
	if _, err := Create(filepath.Join(deeper, "rec"), nil); err == nil || !strings.Contains(err.Error(), "symbolic link of uid 65534") {
		t.Errorf("Create through root's link to another user's = %v, want a refusal", err)
	}
	t.Run("root's links and the user's own are followed", func(t *testing.T) {
		os.Chown(target, 65534, 65534)
		defer os.Chown(target, 0, 0)
		for _, c := range []struct {
			owner *Owner
			uid   int
		}{{nil, 0}, {&Owner{UID: 65534, GID: 65534}, 65534}} {
			// Relative, as most are: resolved from the link's directory.
			l := link(t, fmt.Sprintf("by-%d", c.uid), c.uid, "../../"+filepath.Base(filepath.Dir(target))+"/d")
			f, err := Create(filepath.Join(l, "rec"), c.owner)
			if err != nil {
				t.Errorf("through a link of uid %d: %v", c.uid, err)
				continue
			}
			f.Close()
			if uid, _, _ := owned(t, filepath.Join(target, "rec")); int(uid) != c.uid {
				t.Errorf("through a link of uid %d: rec belongs to uid %d", c.uid, uid)
			}
			os.Remove(filepath.Join(target, "rec"))
		}
	})
	t.Run("a loop of links", func(t *testing.T) {
		a := link(t, "a", 0, "b")
		link(t, "b", 0, "a")
		if _, err := Create(filepath.Join(a, "rec"), nil); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
			t.Errorf("Create through a loop = %v, want ELOOP", err)
		}
	})
}
