package safefile

import (
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

// Under sudo the files go to the user who ran it, as tcpdump -Z gives
// them to its user; a replaced file of theirs is ours to replace.
func TestFilesGoToTheInvokingUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file away")
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
	p := filepath.Join(t.TempDir(), "rec")
	for range 2 { // the second time replaces the invoker's file
		f, err := Create(p, owner)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	st, _ := os.Stat(p)
	if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || s.Gid != 65533 || st.Mode() != 0o600 {
		t.Errorf("rec: uid %d gid %d mode %v, want 65534 65533 -rw-------", s.Uid, s.Gid, st.Mode())
	}
}
