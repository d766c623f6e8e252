package launch

import (
	"fmt"
	"os/user"
	"strconv"
	"syscall"
)

// Identity is who the program runs as.
type Identity struct {
	UID, GID uint32
	Groups   []uint32
	Name     string // "" when the user database does not know the uid
	Home     string
	// Why says how it was chosen, for rdmatrace's messages.
	Why string
	// Keep is true when the program runs with rdmatrace's own
	// credentials (no change).
	Keep bool
}

// Users looks users up; os/user's functions satisfy it (with CGO_ENABLED=0
// they read /etc/passwd and /etc/group).
type Users interface {
	Lookup(name string) (*user.User, error)
	LookupID(uid string) (*user.User, error)
	GroupIDs(u *user.User) ([]string, error)
}

// SystemUsers is the system's user database.
type SystemUsers struct{}

func (SystemUsers) Lookup(name string) (*user.User, error)  { return user.Lookup(name) }
func (SystemUsers) LookupID(uid string) (*user.User, error) { return user.LookupId(uid) }
func (SystemUsers) GroupIDs(u *user.User) ([]string, error) { return u.GroupIds() }

// ChooseUser decides who runs the program. want is --user (a name or a
// numeric uid; "" for the default); getenv and euid are rdmatrace's own.
// The default is the user who invoked rdmatrace: under sudo, SUDO_UID and
// SUDO_GID (doas: DOAS_USER); root only when root itself ran rdmatrace.
// A program tested under `sudo rdmatrace leaks` must meet the permission
// checks and the RLIMIT_MEMLOCK of its real runs, not root's.
func ChooseUser(want string, getenv func(string) string, euid int, users Users) (*Identity, error) {
	if want != "" {
		u, err := users.Lookup(want)
		if err != nil {
			if _, numErr := strconv.ParseUint(want, 10, 32); numErr != nil {
				return nil, fmt.Errorf("--user %s: %v", want, err)
			}
			if u, err = users.LookupID(want); err != nil {
				return identity(want, "", users, "--user")
			}
		}
		id, err := fromUser(u, "", users, "--user")
		if err != nil {
			return nil, err
		}
		if euid != 0 && int(id.UID) != euid {
			return nil, fmt.Errorf("--user %s: only root can run the program as another user", want)
		}
		id.Keep = int(id.UID) == euid && euid != 0
		return id, nil
	}
	if euid != 0 {
		return &Identity{UID: uint32(euid), Keep: true, Why: "rdmatrace's own user"}, nil
	}
	if uid := getenv("SUDO_UID"); uid != "" {
		id, err := identity(uid, getenv("SUDO_GID"), users, "SUDO_UID")
		if err != nil {
			return nil, err
		}
		if id.UID == 0 {
			return &Identity{Keep: true, Why: "root ran sudo"}, nil
		}
		return id, nil
	}
	if name := getenv("DOAS_USER"); name != "" {
		u, err := users.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("DOAS_USER %s: %v", name, err)
		}
		id, err := fromUser(u, "", users, "DOAS_USER")
		if err != nil || id.UID != 0 {
			return id, err
		}
	}
	return &Identity{Keep: true, Why: "root ran rdmatrace itself"}, nil
}

// identity resolves a numeric uid (and gid, "" for the user's own); a uid
// the user database does not know runs with gid (or the uid's number) and
// no supplementary groups.
func identity(uid, gid string, users Users, why string) (*Identity, error) {
	if u, err := users.LookupID(uid); err == nil {
		return fromUser(u, gid, users, why)
	}
	n, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s %q: expected a numeric uid", why, uid)
	}
	id := &Identity{UID: uint32(n), GID: uint32(n), Why: why}
	if gid != "" {
		g, err := strconv.ParseUint(gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("SUDO_GID %q: expected a numeric gid", gid)
		}
		id.GID = uint32(g)
	}
	return id, nil
}

func fromUser(u *user.User, gid string, users Users, why string) (*Identity, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q is not a number", u.Username, u.Uid)
	}
	if gid == "" {
		gid = u.Gid
	}
	g, err := strconv.ParseUint(gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q is not a number", u.Username, gid)
	}
	id := &Identity{UID: uint32(uid), GID: uint32(g), Name: u.Username, Home: u.HomeDir, Why: why}
	gs, _ := users.GroupIDs(u) // none known: only the primary group
	for _, s := range gs {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			id.Groups = append(id.Groups, uint32(n))
		}
	}
	return id, nil
}

// Credential is what syscall.SysProcAttr needs; nil to keep rdmatrace's.
func (id *Identity) Credential() *syscall.Credential {
	if id.Keep {
		return nil
	}
	return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: id.Groups}
}

// Env adjusts the environment for the user: HOME, USER and LOGNAME are
// root's under sudo, and a program that writes to its HOME would fail
// or, worse, write into root's.
func (id *Identity) Env(env []string) []string {
	if id.Keep || id.Name == "" {
		return env
	}
	set := map[string]string{"USER": id.Name, "LOGNAME": id.Name}
	if id.Home != "" {
		set["HOME"] = id.Home
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				k = kv[:i]
				break
			}
		}
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// String names the identity for messages: "alice (uid 1000, from SUDO_UID)".
func (id *Identity) String() string {
	if id.Keep {
		return "rdmatrace's own user (" + id.Why + ")"
	}
	name := id.Name
	if name == "" {
		name = "uid " + strconv.FormatUint(uint64(id.UID), 10)
	} else {
		name += " (uid " + strconv.FormatUint(uint64(id.UID), 10) + ")"
	}
	return name + ", from " + id.Why
}
