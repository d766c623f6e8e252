// Package podnames ties a Kubernetes pod's UID, which is all a node's
// cgroup paths say of it, to its namespace and name, as the node's
// kubelet writes them in the names of its pod log directories:
// /var/log/pods/<namespace>_<name>_<uid>/. Neither a namespace nor a pod
// name may hold "_" (they are DNS names), so the directory name parts
// without doubt.
package podnames

import (
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultDir is where the kubelet keeps its pods' logs.
const DefaultDir = "/var/log/pods"

// maxPods bounds what a Names keeps and reads of one directory listing.
const maxPods = 1 << 14

// rescanEvery is how often at most an unknown UID reads the directory
// again (a pod started since the last reading).
const rescanEvery = time.Second

// Pod is a pod's namespace and name.
type Pod struct{ Namespace, Name string }

// Names looks pods up by UID in Dir's listing, read when a UID is not
// known yet and at most once every rescanEvery. Its methods may be
// called from several goroutines; the zero value reads DefaultDir.
type Names struct {
	Dir string
	// now is time.Now, but for tests.
	now func() time.Time

	mu    sync.Mutex
	byUID map[string]Pod
	read  time.Time
}

// New looks pods up in dir ("" for DefaultDir).
func New(dir string) *Names { return &Names{Dir: dir} }

// Pod names the pod of uid (as the cgroup path spells it, with dashes),
// and false when the node does not tie it to a name (or n is nil).
func (n *Names) Pod(uid string) (Pod, bool) {
	if n == nil || uid == "" {
		return Pod{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.byUID[uid]; ok {
		return p, true
	}
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	if t := now(); n.read.IsZero() || t.Sub(n.read) >= rescanEvery {
		n.read = t
		n.byUID = n.scan()
	}
	p, ok := n.byUID[uid]
	return p, ok
}

// scan reads the directory's names: <namespace>_<name>_<uid>.
func (n *Names) scan() map[string]Pod {
	dir := n.Dir
	if dir == "" {
		dir = DefaultDir
	}
	pods := map[string]Pod{}
	f, err := os.Open(dir)
	if err != nil {
		return pods // not a Kubernetes node, or not visible here
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxPods)
	for _, name := range names {
		if ns, pod, uid, ok := Parse(name); ok {
			pods[uid] = Pod{Namespace: ns, Name: pod}
		}
	}
	return pods
}

// Parse reads a pod log directory's name: <namespace>_<name>_<uid>.
func Parse(dir string) (namespace, name, uid string, ok bool) {
	parts := strings.Split(dir, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || len(parts[2]) != 36 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
