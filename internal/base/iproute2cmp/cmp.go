// Package iproute2cmp compares rdmatrace's JSON with iproute2's `rdma -j`
// output for the same kernel state, object by object and key by key,
// allowing only the documented places where rdmatrace fixes an iproute2 bug.
package iproute2cmp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// KnownDifferences maps, per key, a value rdmatrace prints to the value
// iproute2 6.1 prints for the same kernel value.
var KnownDifferences = map[string]map[string]string{
	// RDMA_PS_IB (0x13F) is printed "IPoIB" by iproute2.
	"ps": {"IB": "IPoIB"},
	// iproute2 indexes enum ib_poll_context from DIRECT (the kernel's 3).
	"poll-ctx": {"SOFTIRQ": "DIRECT", "WORKQUEUE": "SOFTIRQ", "UNBOUND_WORKQUEUE": "WORKQUEUE", "DIRECT": "UNBOUND_WORKQUEUE"},
}

// BrokenKeys lists, per object type, keys whose iproute2 6.1 value is
// wrong for reasons of its own. They must be present on both sides, but
// their values are not compared; callers check rdmatrace's value another way.
var BrokenKeys = map[string][]string{
	// res-srq.c keeps a pointer to a block-scoped buffer for comm, and
	// the SRQ's QP list overwrites it: iproute2 prints e.g. "comm 17-20".
	"srq": {"comm"},
}

// Additions are keys rdmatrace adds to iproute2's objects: where the owner
// runs (formats' place keys), the namespace a --netns listing came from,
// whether the kernel sends device events. Where iproute2 has none of
// them, they are not compared.
var Additions = []string{"cgroup", "runtime", "container-id", "job", "pod-uid", "pod-namespace", "pod-name", "pidns-pid", "netns", "netns-name", "monitor-mode"}

// Compare returns one line per difference between iproute2's JSON array and
// rdmatrace's for objects of type typ ("qp", "srq", ...; "" for the
// summary); none means they describe the same objects in the same order.
func Compare(typ string, iproute2JSON, rdmatraceJSON []byte) ([]string, error) {
	var theirs, ours []map[string]any
	if err := json.Unmarshal(iproute2JSON, &theirs); err != nil {
		return nil, fmt.Errorf("rdma -j output is not a JSON array: %w", err)
	}
	if err := json.Unmarshal(rdmatraceJSON, &ours); err != nil {
		return nil, fmt.Errorf("rdmatrace -j output is not a JSON array: %w", err)
	}
	if len(ours) != len(theirs) {
		return []string{fmt.Sprintf("rdmatrace lists %d objects, rdma lists %d", len(ours), len(theirs))}, nil
	}
	var diffs []string
	for i := range theirs {
		o := ours[i]
		for _, k := range Additions {
			if _, theirsToo := theirs[i][k]; !theirsToo {
				delete(o, k)
			}
		}
		for k, v := range o {
			if s, ok := v.(string); ok {
				if m, ok := KnownDifferences[k][s]; ok {
					o[k] = m
				}
			}
		}
		for _, k := range BrokenKeys[typ] {
			_, a := o[k]
			_, b := theirs[i][k]
			if a && b {
				o[k] = theirs[i][k]
			}
		}
		if !reflect.DeepEqual(o, theirs[i]) {
			diffs = append(diffs, fmt.Sprintf("object %d: %s\n  rdma:      %s\n  rdmatrace: %s", i, keyDiff(theirs[i], o), mustJSON(theirs[i]), mustJSON(o)))
		}
	}
	return diffs, nil
}

func keyDiff(a, b map[string]any) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "missing "+k)
		} else if !reflect.DeepEqual(v, w) {
			d = append(d, fmt.Sprintf("%s %v != %v", k, v, w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CompareText returns one line per difference between iproute2's text
// output and rdmatrace's `-o text` for objects of type typ, compared line
// by line and word by word (iproute2 ends each line with a blank). The
// known differences and broken keys are allowed as in Compare; in text a
// value is the word after its key.
func CompareText(typ, iproute2Text, rdmatraceText string) []string {
	theirs := nonEmptyLines(iproute2Text)
	ours := nonEmptyLines(rdmatraceText)
	if len(ours) != len(theirs) {
		return []string{fmt.Sprintf("rdmatrace prints %d lines, rdma prints %d", len(ours), len(theirs))}
	}
	broken := map[string]bool{}
	for _, k := range BrokenKeys[typ] {
		broken[k] = true
	}
	var diffs []string
	for i := range theirs {
		if !sameWords(strings.Fields(theirs[i]), strings.Fields(ours[i]), broken) {
			diffs = append(diffs, fmt.Sprintf("line %d:\n  rdma:      %s\n  rdmatrace: %s", i+1, strings.TrimSpace(theirs[i]), strings.TrimSpace(ours[i])))
		}
	}
	return diffs
}

// sameWords reports whether two lines say the same: word by word, except
// that a value (the word after a key both lines have) may be a known
// difference, and the value of a broken key may be anything.
func sameWords(theirs, ours []string, broken map[string]bool) bool {
	if len(theirs) != len(ours) {
		return false
	}
	for j := range theirs {
		if theirs[j] == ours[j] {
			continue
		}
		if j == 0 || theirs[j-1] != ours[j-1] {
			return false // not a value after a shared key
		}
		key := theirs[j-1]
		if !broken[key] && KnownDifferences[key][ours[j]] != theirs[j] {
			return false
		}
	}
	return true
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
