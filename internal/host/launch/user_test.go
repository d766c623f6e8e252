package launch

import (
	"errors"
	"os/user"
	"reflect"
	"testing"
)

// fakeUsers is a user database: alice (1000, groups 1000 and 27), root.
type fakeUsers map[string]*user.User

var users = fakeUsers{
	"alice": {Uid: "1000", Gid: "1000", Username: "alice", HomeDir: "/home/alice"},
	"root":  {Uid: "0", Gid: "0", Username: "root", HomeDir: "/root"},
}

func (f fakeUsers) Lookup(name string) (*user.User, error) {
	if u, ok := f[name]; ok {
		return u, nil
	}
	return nil, user.UnknownUserError(name)
}

func (f fakeUsers) LookupID(uid string) (*user.User, error) {
	for _, u := range f {
		if u.Uid == uid {
			return u, nil
		}
	}
	return nil, errors.New("unknown uid " + uid)
}

func (f fakeUsers) GroupIDs(u *user.User) ([]string, error) {
	if u.Username == "alice" {
		return []string{"1000", "27"}, nil
	}
	return []string{u.Gid}, nil
}

func TestChooseUser(t *testing.T) {
	for _, c := range []struct {
		name string
		want string            // --user
		env  map[string]string // rdmatrace's environment
		euid int
		// expected
		keep         bool
		uid, gid     uint32
		groups       []uint32
		err          bool
		home, reason string
	}{
		{name: "sudo runs it as the invoking user with her groups", env: map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000"},
			uid: 1000, gid: 1000, groups: []uint32{1000, 27}, home: "/home/alice", reason: "SUDO_UID"},
		{name: "sudo's gid wins over the passwd one", env: map[string]string{"SUDO_UID": "1000", "SUDO_GID": "50"},
			uid: 1000, gid: 50, groups: []uint32{1000, 27}, home: "/home/alice", reason: "SUDO_UID"},
		{name: "an unknown SUDO_UID runs with SUDO_GID and no groups", env: map[string]string{"SUDO_UID": "2000", "SUDO_GID": "2001"},
			uid: 2000, gid: 2001, reason: "SUDO_UID"},
		{name: "a SUDO_UID that is no number is an error", env: map[string]string{"SUDO_UID": "x"}, err: true},
		{name: "root running sudo stays root", env: map[string]string{"SUDO_UID": "0", "SUDO_GID": "0"}, keep: true},
		{name: "real root without sudo stays root", keep: true},
		{name: "doas runs it as DOAS_USER", env: map[string]string{"DOAS_USER": "alice"},
			uid: 1000, gid: 1000, groups: []uint32{1000, 27}, home: "/home/alice", reason: "DOAS_USER"},
		{name: "--user by name", want: "alice", env: map[string]string{"SUDO_UID": "0"},
			uid: 1000, gid: 1000, groups: []uint32{1000, 27}, home: "/home/alice", reason: "--user"},
		{name: "--user by a uid the database lacks", want: "3000", uid: 3000, gid: 3000, reason: "--user"},
		{name: "--user root under sudo is root", want: "root", env: map[string]string{"SUDO_UID": "1000"},
			uid: 0, gid: 0, groups: []uint32{0}, home: "/root", reason: "--user"},
		{name: "--user of an unknown name is an error", want: "mallory", err: true},
		{name: "a user without root runs it as herself", euid: 1000, keep: true},
		{name: "a user without root cannot choose another", want: "root", euid: 1000, err: true},
		{name: "a user without root may name herself", want: "alice", euid: 1000, keep: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := ChooseUser(c.want, func(k string) string { return c.env[k] }, c.euid, users)
			if c.err {
				if err == nil {
					t.Fatalf("no error; chose %v", id)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Keep != c.keep {
				t.Fatalf("Keep = %v, want %v (%v)", id.Keep, c.keep, id)
			}
			if c.keep {
				if id.Credential() != nil {
					t.Errorf("a kept identity changes credentials: %+v", id.Credential())
				}
				return
			}
			cr := id.Credential()
			if cr.Uid != c.uid || cr.Gid != c.gid || !reflect.DeepEqual(cr.Groups, c.groups) {
				t.Errorf("credential %d:%d %v, want %d:%d %v", cr.Uid, cr.Gid, cr.Groups, c.uid, c.gid, c.groups)
			}
			if id.Home != c.home || id.Why != c.reason {
				t.Errorf("home %q why %q, want %q %q", id.Home, id.Why, c.home, c.reason)
			}
		})
	}
}

func TestEnvIsTheUsers(t *testing.T) {
	id, err := ChooseUser("", func(k string) string { return map[string]string{"SUDO_UID": "1000"}[k] }, 0, users)
	if err != nil {
		t.Fatal(err)
	}
	got := id.Env([]string{"PATH=/bin", "HOME=/root", "USER=root", "LOGNAME=root", "SUDO_UID=1000"})
	want := []string{"PATH=/bin", "SUDO_UID=1000", "HOME=/home/alice", "USER=alice", "LOGNAME=alice"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	if s := id.String(); s != "alice (uid 1000), from SUDO_UID" {
		t.Errorf("String = %q", s)
	}
}
