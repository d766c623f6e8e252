//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/iproute2cmp"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// resFiltersMatchIproute2 runs every filter key of every type, with a
// value taken from the live objects (one value, then a comma list of two),
// through `rdma -j res show TYPE KEY VALUE` and `rdmatrace res TYPE KEY
// VALUE -j`, and compares the results object by object. Every value is
// one the objects have, so no filter selects nothing. Keys iproute2 does
// not take (comm, dev for QPs) are checked against iproute2's unfiltered
// objects; at least three filters per type must be compared.
func resFiltersMatchIproute2(t *testing.T) {
	for _, rt := range rdma.ResourceTypes {
		typ := rt.String()
		t.Run(typ, func(t *testing.T) {
			needResDump(t, typ)
			unfiltered := run(t, "rdma", "-j", "res", "show", typ)
			var all []map[string]any
			if err := json.Unmarshal(unfiltered, &all); err != nil {
				t.Fatal(err)
			}
			// Each filter is two programs (iproute2's, ours): two at a
			// time, as the guest has two CPUs; compared in order after.
			type job struct {
				key, val          string
				theirs, theirsErr []byte
				err               error
				ours, oursErr     []byte
				oursErrRun        error
				own               bool // a key iproute2 does not take
			}
			var jobs []*job
			for _, key := range filter.Keys(rt) {
				for _, val := range filterValues(key, all) {
					jobs = append(jobs, &job{key: key, val: val})
				}
			}
			var wg sync.WaitGroup
			sem := make(chan struct{}, 2)
			for _, j := range jobs {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					j.theirs, j.theirsErr, j.err = runStatus("rdma", "-j", "res", "show", typ, j.key, j.val)
					j.own = j.err != nil && strings.Contains(string(j.theirsErr), "Unsupported filter option") && !broken(typ, j.key)
					val := ourValue(j.key, j.val)
					if j.own {
						val = j.val
					}
					if j.err == nil || j.own {
						j.ours, j.oursErr, j.oursErrRun = runStatus(*rdmatraceBin, "res", typ, j.key, val, "-j")
					}
				}()
			}
			wg.Wait()
			compared := 0
			for _, j := range jobs {
				if j.err != nil && !j.own {
					t.Logf("rdma res show %s %s %s: %v: %s (not compared)", typ, j.key, j.val, j.err, strings.TrimSpace(string(j.theirsErr)))
					continue
				}
				t.Run(j.key+"="+j.val, func(t *testing.T) {
					if j.oursErrRun != nil {
						t.Fatalf("rdmatrace res %s %s %s -j: %v\n%s", typ, j.key, j.val, j.oursErrRun, j.oursErr)
					}
					if j.own {
						// A key of rdmatrace's own (comm, dev): the
						// reference is iproute2's objects with that value.
						compareObjects(t, typ, reference(t, j.key, j.val, unfiltered, true), j.ours)
						return
					}
					if j.key == "pid" {
						// A process, as procps' -p: iproute2's objects of
						// that pid and of every thread of that process.
						compareObjects(t, typ, processReference(t, j.val, unfiltered), j.ours)
						return
					}
					compareObjects(t, typ, reference(t, j.key, j.val, j.theirs, false), j.ours)
				})
				compared++
			}
			t.Logf("%s: %d filters compared", typ, compared)
			if compared < 3 {
				t.Errorf("%s: only %d filters compared: the test proves too little", typ, compared)
			}
		})
	}
}

// filterValues gives values of key seen in iproute2's objects: the first
// object's, and a comma list of the first two distinct ones.
func filterValues(key string, objs []map[string]any) []string {
	var vals []string
	seen := map[string]bool{}
	for _, o := range objs {
		v, ok := valueOf(key, o)
		if ok && !seen[v] && v != "" {
			seen[v] = true
			vals = append(vals, v)
		}
		if len(vals) == 2 {
			break
		}
	}
	switch len(vals) {
	case 0:
		return nil
	case 1:
		return vals
	}
	if key == "link" || key == "dev" {
		return vals[:1] // iproute2 takes one device
	}
	return []string{vals[0], vals[0] + "," + vals[1]}
}

// valueOf reads a filter key's value from one of iproute2's JSON objects.
func valueOf(key string, o map[string]any) (string, bool) {
	switch key {
	case "link":
		if p, ok := o["port"]; ok {
			return fmt.Sprintf("%v/%v", o["ifname"], p), true
		}
		return "", false
	case "dev":
		return fmt.Sprint(o["ifname"]), true
	case "src-addr", "dst-addr", "src-port", "dst-port":
		s, ok := o[strings.Replace(key, "-port", "-addr", 1)].(string)
		if !ok {
			return "", false
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return "", false
		}
		if strings.HasSuffix(key, "-port") {
			return fmt.Sprint(ap.Port()), true
		}
		return ap.Addr().String(), true
	case "ps":
		if o[key] == "IPoIB" { // iproute2's name for both IPoIB and IB
			return "", false
		}
	}
	v, ok := o[key]
	if !ok {
		return "", false
	}
	switch v := v.(type) {
	case float64:
		return fmt.Sprint(uint64(v)), true
	case string:
		if key == "rkey" || key == "lkey" { // printed in hex, filtered in decimal
			n, err := strconv.ParseUint(v, 16, 32)
			return fmt.Sprint(n), err == nil
		}
		return v, true
	}
	return "", false
}

// reference is what rdmatrace should select for KEY VAL, taken from
// iproute2: its filtered output without what iproute2 6.1 gets wrong, or,
// for a key iproute2 does not take, its unfiltered objects with the value.
// iproute2 6.1 accepts rkey and lkey filters on MRs but never applies them
// (res-mr.c checks only mrlen, pid, mrn and pdn), and lets a name filter
// pass an object that lacks the attribute, as if it had the value 0
// (rd_is_string_filtered_attr ignores the missing attribute:
// `path-mig-state MIGRATED` lists the GSI QP, which has none). rdmatrace
// filters on what the kernel sent.
func reference(t *testing.T, key, val string, theirs []byte, unfiltered bool) []byte {
	t.Helper()
	var objs, keep []map[string]any
	if err := json.Unmarshal(theirs, &objs); err != nil {
		t.Fatalf("%v: %s", err, theirs)
	}
	want := map[string]bool{}
	for _, v := range strings.Split(val, ",") {
		want[v] = true
	}
	for _, o := range objs {
		v, ok := valueOf(key, o)
		if !ok {
			continue
		}
		if (unfiltered || key == "rkey" || key == "lkey") && !want[v] {
			continue
		}
		keep = append(keep, o)
	}
	if keep == nil {
		keep = []map[string]any{}
	}
	out, err := json.Marshal(keep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// processReference is what pid VAL selects in rdmatrace: iproute2's
// objects whose pid (the creating thread) is one of VAL's, or a thread of
// one of them (/proc's Tgid); the workloads are stopped, their threads
// still there.
func processReference(t *testing.T, val string, theirs []byte) []byte {
	t.Helper()
	var objs, keep []map[string]any
	if err := json.Unmarshal(theirs, &objs); err != nil {
		t.Fatalf("%v: %s", err, theirs)
	}
	want := map[uint32]bool{}
	for _, v := range strings.Split(val, ",") {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			t.Fatalf("pid %q", v)
		}
		want[uint32(n)] = true
	}
	var procs proc.CommCache
	for _, o := range objs {
		if p, ok := o["pid"].(float64); ok && (want[uint32(p)] || want[procs.TGID(uint32(p))]) {
			keep = append(keep, o)
		}
	}
	if keep == nil {
		keep = []map[string]any{}
	}
	out, err := json.Marshal(keep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// broken reports whether iproute2's value of key is wrong for typ.
func broken(typ, key string) bool {
	for _, k := range iproute2cmp.BrokenKeys[typ] {
		if k == key {
			return true
		}
	}
	return false
}

// ourValue turns a value as iproute2 names it into rdmatrace's name, where
// rdmatrace fixes an iproute2 naming bug (poll-ctx).
func ourValue(key, val string) string {
	var out []string
	for _, v := range strings.Split(val, ",") {
		for ours, theirs := range iproute2cmp.KnownDifferences[key] {
			if theirs == v {
				v = ours
				break
			}
		}
		out = append(out, v)
	}
	return strings.Join(out, ",")
}
