//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
)

// legacyLayoutFromLiveData prints the live cm_ids of a running rping
// pair (and ib_write_lat -R) in the legacy rdma_cm debugfs layout with PID
// and COMM, reads that back with `rdmatrace parse`, and checks every row
// against the netlink view of the same IDs.
func legacyLayoutFromLiveData(t *testing.T) {

	live := run(t, *rdmatraceBin, "res", "cm_id", "-j")
	legacy := run(t, *rdmatraceBin, "res", "cm_id", "-o", "legacy")
	keep(t, "legacy/cm_id.legacy", legacy)
	if !bytes.HasPrefix(legacy, []byte("TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM\n")) {
		t.Fatalf("legacy output does not start with the legacy header plus PID COMM:\n%s", legacy)
	}
	cmd := exec.Command(*rdmatraceBin, "parse", "-j", "-")
	cmd.Stdin = bytes.NewReader(legacy)
	parsed, err := cmd.Output()
	if err != nil {
		t.Fatalf("rdmatrace parse of our own legacy output: %v\n%s", err, legacy)
	}

	var ids []map[string]any
	if err := json.Unmarshal(live, &ids); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(parsed))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("parse -j line %q: %v", sc.Text(), err)
		}
		rows = append(rows, m)
	}
	if len(ids) < 5 || len(rows) != len(ids) {
		t.Fatalf("%d live cm_ids, %d legacy rows (want the same, at least 5):\n%s", len(ids), len(rows), legacy)
	}
	for i, id := range ids {
		row := rows[i]
		check := func(key string, want any) {
			if fmt.Sprint(row[key]) != fmt.Sprint(want) {
				t.Errorf("row %d: %s = %v, want %v\n  live:   %s\n  legacy: %s", i, key, row[key], want, mustJSON(id), mustJSON(row))
			}
		}
		check("ifname", id["ifname"])
		check("port", id["port"])
		check("state", id["state"])
		check("ps", id["ps"])
		check("src-addr", id["src-addr"])
		check("pid", id["pid"])
		check("comm", id["comm"])
		check("dev-type", "ETH")
		if id["port"] != nil {
			check("netdev", "veth0")
		} else {
			check("netdev", nil) // a wildcard listener: a device, no port
		}
		if lqpn, ok := id["lqpn"]; ok {
			check("lqpn", lqpn)
		}
		if id["state"] != "LISTEN" {
			check("dst-addr", id["dst-addr"])
		}
	}
}
