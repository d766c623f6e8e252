//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/iproute2cmp"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// resMatchesIproute2 compares `rdmatrace res <type> -j` with
// `rdma -j res show <type>` object by object and key by key, while
// workloads hold QPs, CM_IDs, CQs, MRs, PDs and contexts, stopped with
// SIGSTOP so both snapshots describe the same state.
func resMatchesIproute2(t *testing.T) {

	for _, typ := range []string{"", "qp", "cm_id", "cq", "mr", "pd", "ctx", "srq"} {
		name := typ
		if name == "" {
			name = "summary"
		}
		t.Run(name, func(t *testing.T) {
			if typ != "" {
				needResDump(t, typ)
			}
			rdmaArgs := []string{"-j", "res", "show"}
			ourArgs := []string{"res", "-j", "--nl-record", *outDir + "/netlink/" + name}
			if *outDir == "" {
				ourArgs = []string{"res", "-j"}
			}
			if typ != "" {
				rdmaArgs = append(rdmaArgs, typ)
				ourArgs = append(ourArgs, typ)
			}
			theirs := run(t, "rdma", rdmaArgs...)
			ours := run(t, *rdmatraceBin, ourArgs...)
			keep(t, "rdma/"+name+".json", theirs)
			keep(t, "rdmatrace/"+name+".json", ours)
			compareObjects(t, typ, theirs, ours)
			if typ == "srq" {
				checkCommsFromProc(t, ours)
			}
		})
	}
	keepComms(t)
}

func compareObjects(t *testing.T, typ string, theirs, ours []byte) {
	t.Helper()
	diffs, err := iproute2cmp.Compare(typ, theirs, ours)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) > 0 {
		t.Logf("rdma:      %s\nrdmatrace: %s", theirs, ours)
	}
}

// checkCommsFromProc checks each object's comm against /proc/PID/comm, for
// types where iproute2's own comm cannot serve as the reference.
func checkCommsFromProc(t *testing.T, ours []byte) {
	t.Helper()
	var objs []owned
	if err := json.Unmarshal(ours, &objs); err != nil {
		t.Fatal(err)
	}
	var c proc.CommCache
	for i, o := range objs {
		if o.PID == nil {
			continue
		}
		pid := *o.PID
		if want := c.Comm(pid); o.Comm == nil || *o.Comm != want || want == "" {
			t.Errorf("object %d: comm %v, /proc/%v/comm says %q", i, text(o.Comm), pid, want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// keepComms saves the names of the processes that own resources, so unit
// tests can replay the recorded netlink replies with the same names.
func keepComms(t *testing.T) {
	comms := map[string]string{}
	var c proc.CommCache
	c2, err := nldev.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	devs, err := c2.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range rdma.ResourceTypes {
		rs, err := c2.Resources(typ, devs)
		if errors.Is(err, errors.ErrUnsupported) {
			continue // Linux 5.10: no ctx or srq dump
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Has&rdma.HasPID != 0 {
				comms[fmt.Sprint(r.Owner.PID)] = c.Comm(r.Owner.PID)
			}
		}
	}
	b, _ := json.MarshalIndent(comms, "", "  ")
	keep(t, "comm.json", append(b, '\n'))
}

// keysWithheldWithoutNetAdmin runs rdmatrace without capabilities: MR
// and PD keys are marked withheld, everything else is still shown.
func keysWithheldWithoutNetAdmin(t *testing.T) {
	nobody := []string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", *rdmatraceBin}
	for _, typ := range []string{"mr", "pd"} {
		root := run(t, *rdmatraceBin, "res", typ, "-j")
		unpriv := run(t, "setpriv", append(nobody, "res", typ, "-j")...)
		var a, b []map[string]any
		if err := json.Unmarshal(root, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(unpriv, &b); err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: %d objects as root, %d without CAP_NET_ADMIN", typ, len(a), len(b))
		}
		keys := map[string][]string{"mr": {"rkey", "lkey"}, "pd": {"local_dma_lkey"}}[typ]
		for i := range a {
			for _, k := range keys {
				if _, ok := b[i][k]; ok {
					t.Errorf("%s %d: %s shown without CAP_NET_ADMIN: %s", typ, i, k, mustJSON(b[i]))
				}
				delete(a[i], k)
			}
			wh, _ := b[i]["withheld"].([]any)
			if len(wh) != len(keys) {
				t.Errorf("%s %d: withheld = %v, want %v", typ, i, b[i]["withheld"], keys)
			}
			delete(b[i], "withheld")
			// Where the owner runs comes from /proc, where nobody may not
			// read another user's namespaces: not the kernel's to withhold.
			for _, k := range iproute2cmp.Additions {
				delete(a[i], k)
				delete(b[i], k)
			}
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("%s %d: apart from the keys, root sees %s and nobody %s", typ, i, mustJSON(a[i]), mustJSON(b[i]))
			}
		}
	}
}
