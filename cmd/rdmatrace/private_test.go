package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCreatePrivateMakesOwnerOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	mode := func(p string) os.FileMode {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode()
	}
	write := func(p string) error {
		f, err := createPrivate(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString("new")
		return err
	}

	t.Run("a new file is 0600 whatever the umask", func(t *testing.T) {
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		p := filepath.Join(dir, "new.raw")
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		if m := mode(p); m != 0o600 {
			t.Errorf("mode %v, want -rw-------", m)
		}
	})
	t.Run("an existing file of ours is truncated and made 0600", func(t *testing.T) {
		p := filepath.Join(dir, "old.raw")
		os.WriteFile(p, []byte("older and longer"), 0o644)
		os.Chmod(p, 0o644)
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "new" {
			t.Errorf("content %q, want %q", b, "new")
		}
		if m := mode(p); m != 0o600 {
			t.Errorf("mode %v, want -rw-------", m)
		}
	})
	for _, tc := range []struct {
		name, want string
		make       func(p string) error
	}{
		{"a symbolic link is refused", "symbolic link", func(p string) error { return os.Symlink(filepath.Join(dir, "target"), p) }},
		{"a FIFO is refused without blocking", "not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o666) }},
		{"a directory is refused", "is a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"another user's file is refused", "belongs to uid 65534", func(p string) error {
			if os.Geteuid() != 0 {
				t.Skip("needs root to make a file of another user")
			}
			if err := os.WriteFile(p, nil, 0o666); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			err := write(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("createPrivate = %v, want an error naming %s and saying %q", err, p, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "target")); err == nil {
				t.Error("the link's target was created")
			}
		})
	}
}
