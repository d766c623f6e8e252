//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	var ids []cmIDRow
	if err := json.Unmarshal(live, &ids); err != nil {
		t.Fatal(err)
	}
	var rows []cmIDRow
	sc := bufio.NewScanner(bytes.NewReader(parsed))
	for sc.Scan() {
		var m cmIDRow
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
		check := func(key, got, want string) {
			if got != want {
				t.Errorf("row %d: %s = %v, want %v\n  live:   %s\n  legacy: %s", i, key, got, want, mustJSON(id), mustJSON(row))
			}
		}
		check("ifname", text(row.Ifname), text(id.Ifname))
		check("port", text(row.Port), text(id.Port))
		check("state", text(row.State), text(id.State))
		check("ps", text(row.PS), text(id.PS))
		check("src-addr", text(row.Src), text(id.Src))
		check("pid", text(row.PID), text(id.PID))
		check("comm", text(row.Comm), text(id.Comm))
		check("dev-type", text(row.DevType), "ETH")
		if id.Port != nil {
			check("netdev", text(row.Netdev), "veth0")
		} else {
			check("netdev", text(row.Netdev), "<nil>") // a wildcard listener: a device, no port
		}
		if id.LQPN != nil {
			check("lqpn", text(row.LQPN), text(id.LQPN))
		}
		if text(id.State) != "LISTEN" {
			check("dst-addr", text(row.Dst), text(id.Dst))
		}
	}
}
