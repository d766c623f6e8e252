package podnames

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A node's pod log directories name its pods: a UID is tied to its
// namespace and name; what is not a pod's directory is passed over; a
// pod started later is found once the listing is read again, and the
// listing is not read again sooner than rescanEvery.
func TestPodLogDirectoriesNamePods(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{
		"train_llm-0_0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6",
		"kube-system_rdma-shared-dp-ds-x7k2p_11111111-2222-3333-4444-555555555555",
		"not-a-pod", "a_b_short", "_x_0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f7",
	} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Unix(1000, 0)
	n := &Names{Dir: dir, now: func() time.Time { return clock }}
	if p, ok := n.Pod("0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"); !ok || p != (Pod{"train", "llm-0"}) {
		t.Errorf("Pod = %+v, %v", p, ok)
	}
	if p, ok := n.Pod("11111111-2222-3333-4444-555555555555"); !ok || p.Namespace != "kube-system" || p.Name != "rdma-shared-dp-ds-x7k2p" {
		t.Errorf("Pod = %+v, %v", p, ok)
	}
	if _, ok := n.Pod("0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f7"); ok {
		t.Error("a directory without a namespace named a pod")
	}
	later := "99999999-2222-3333-4444-555555555555"
	os.Mkdir(filepath.Join(dir, "train_llm-1_"+later), 0o755)
	if _, ok := n.Pod(later); ok {
		t.Error("the listing was read again within rescanEvery")
	}
	clock = clock.Add(rescanEvery)
	if p, ok := n.Pod(later); !ok || p.Name != "llm-1" {
		t.Errorf("a pod started later: %+v, %v", p, ok)
	}
	if _, ok := (&Names{Dir: filepath.Join(dir, "missing")}).Pod(later); ok {
		t.Error("a missing directory named a pod")
	}
}
