//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

var rdmaUp = flag.String("rdma-up", "guest/rdma-up.sh", "script that creates rxe0 on the guest's veth")

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: these tests run as root inside the guest: make e2e")
		os.Exit(2)
	}
	// The RDMA core without any device: the "no devices" case.
	out, err := exec.Command("modprobe", "-a", "ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: modprobe: %v\n%s", err, out)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

var deviceOnce sync.Once

// needDevice creates rxe0 the first time a test needs it.
func needDevice(t *testing.T) {
	t.Helper()
	var err error
	var out []byte
	deviceOnce.Do(func() {
		out, err = exec.Command(*rdmaUp).CombinedOutput()
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", *rdmaUp, err, out)
	}
}
