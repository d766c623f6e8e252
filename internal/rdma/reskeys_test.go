package rdma

import "testing"

// Each iproute2 key is in the table once, reads what it stores, and is
// present exactly when its bit is set.
func TestResKeysAreOneEachAndReadWhatTheyStore(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range ResKeys {
		if seen[k.Name] {
			t.Errorf("key %q is in the table twice", k.Name)
		}
		seen[k.Name] = true
		if (k.Num == nil) == (k.Str == nil) && k != &KeyDIM {
			t.Errorf("key %q: want exactly one of Num and Str", k.Name)
		}
		if (k.Num == nil) != (k.SetNum == nil) {
			t.Errorf("key %q: a number key reads and sets", k.Name)
		}
		if k.SetNum == nil {
			continue
		}
		var r Resource
		if k.Has != 0 && k.Present(&r) {
			t.Errorf("key %q present in an empty resource", k.Name)
		}
		k.SetNum(&r, 0xfeed)
		if got := k.Num(&r); got != 0xfeed || !k.Present(&r) {
			t.Errorf("key %q: set 0xfeed, read %#x, present %v", k.Name, got, k.Present(&r))
		}
	}
}

// type and state read the field of the resource's own type.
func TestTypeAndStateFollowTheResourceType(t *testing.T) {
	qp := Resource{Type: ResQP, QPType: QPTypeRC, QPState: QPStateRTS, Has: HasQPType | HasState}
	srq := Resource{Type: ResSRQ, SRQType: SRQType(0), Has: HasSRQType}
	cm := Resource{Type: ResCMID, CMState: CMConnect, Has: HasState}
	for _, c := range []struct {
		r    *Resource
		k    *ResKey
		want string
	}{{&qp, &KeyType, "RC"}, {&qp, &KeyState, "RTS"}, {&srq, &KeyType, "BASIC"}, {&cm, &KeyState, "CONNECT"}} {
		if got := c.k.Str(c.r); got != c.want || !c.k.Present(c.r) {
			t.Errorf("%s of a %s: %q (present %v), want %q", c.k.Name, c.r.Type, got, c.k.Present(c.r), c.want)
		}
	}
}
