package verbs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMappedV4ReadsIPv4MappedGIDs(t *testing.T) {
	for gid, want := range map[string]string{
		"0000:0000:0000:0000:0000:ffff:0a63:0001": "10.99.0.1",
		"0000:0000:0000:0000:0000:ffff:c0a8:01fe": "192.168.1.254",
	} {
		if got, ok := mappedV4(gid); !ok || got != want {
			t.Errorf("%s: %q %v", gid, got, ok)
		}
	}
	for _, gid := range []string{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "0000:0000:0000:0000:0000:0000:0000:0000", "0000:0000:0000:0000:0000:ffff:zzzz:0001", ""} {
		if _, ok := mappedV4(gid); ok {
			t.Errorf("%q taken for IPv4", gid)
		}
	}
}

func TestAddrOfFindsTheFirstIPv4GIDOrTheOneAsked(t *testing.T) {
	sys := t.TempDir()
	dir := filepath.Join(sys, "class/infiniband/rxe0/ports/1/gids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, g := range []string{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "0000:0000:0000:0000:0000:ffff:0a63:0001", "0000:0000:0000:0000:0000:ffff:0a63:0002"} {
		if err := os.WriteFile(filepath.Join(dir, string(rune('0'+i))), []byte(g+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := AddrOf(sys, "rxe0", 1, -1); a != "10.99.0.1" || err != nil {
		t.Errorf("first: %q %v", a, err)
	}
	if a, err := AddrOf(sys, "rxe0", 1, 2); a != "10.99.0.2" || err != nil {
		t.Errorf("index 2: %q %v", a, err)
	}
	if _, err := AddrOf(sys, "rxe0", 1, 0); err == nil {
		t.Error("index 0 (link-local) gave an address")
	}
	if _, err := AddrOf(sys, "rxe0", 2, -1); err == nil {
		t.Error("a port without GIDs gave an address")
	}
}

func TestParseOp(t *testing.T) {
	for s, want := range map[string]Op{"write": Write, "SEND": Send, "read": Read} {
		if o, err := ParseOp(s); o != want || err != nil {
			t.Errorf("%s: %v %v", s, o, err)
		}
	}
	if _, err := ParseOp("atomic"); err == nil {
		t.Error("atomic accepted")
	}
}

// The host has no RDMA device: the error must say so, in one line.
func TestCheckDeviceWithoutDevicesSaysSo(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this machine has RDMA devices")
	}
	_, err := CheckDevice("rxe9", 1, -1)
	if err == nil || err.Error() != "no RDMA device rxe9 (there is none)" {
		t.Errorf("got %v", err)
	}
}

func TestClockCostIsMeasured(t *testing.T) {
	c := ClockCost(1_000_000)
	if c <= 0 || c > 100000 {
		t.Errorf("clock_gettime costs %v ns?", c)
	}
	t.Logf("clock_gettime(CLOCK_MONOTONIC): %.1f ns", c)
}
