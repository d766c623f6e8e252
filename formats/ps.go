package formats

import (
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ps"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ProcessObject is a row of rdmatrace ps with `rdma res`'s key names where they exist (pid,
// comm, and each type's name as the count of it).
func ProcessObject(r *ps.Row) Object {
	var o Object
	if r.Module != "" {
		o = append(o, Field{Key: "kern-name", Kind: Str, Str: r.Module})
	} else {
		o = append(o, Field{Key: "pid", Kind: Num, Num: uint64(r.PID)},
			Field{Key: "comm", Kind: Str, Str: r.Comm})
		o = AppendPlace(o, r.Place)
	}
	for i, t := range rdma.ResourceTypes {
		if r.Counts[i] >= 0 { // -1: the kernel cannot tell
			o = append(o, Field{Key: t.String(), Kind: Num, Num: uint64(r.Counts[i])})
		}
	}
	o = append(o, Field{Key: "devices", Kind: StrList, List: nonNil(r.Devices)})
	if r.Module == "" {
		o = append(o, Field{Key: "files", Kind: StrList, List: nonNil(r.Files)})
	}
	return o
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ProcessTable lays rows out as lsof would: one line per holder, kernel users as
// [module].
func ProcessTable(rows []ps.Row) *Table {
	head := []string{"PID", "COMMAND"}
	for _, t := range rdma.ResourceTypes {
		head = append(head, strings.ToUpper(t.String()))
	}
	head = append(head, "DEVICES", "FILES")
	containers := false
	for i := range rows {
		containers = containers || ContainerName(rows[i].Place) != ""
	}
	if containers {
		head = append(head, "CONTAINER")
	}
	t := NewTable(head...)
	for i := range rows {
		r := &rows[i]
		pid, comm := strconv.FormatUint(uint64(r.PID), 10), r.Comm
		if r.Module != "" {
			pid, comm = "-", "["+r.Module+"]"
		}
		cells := []string{pid, comm}
		for _, n := range r.Counts {
			if n < 0 {
				cells = append(cells, "") // rendered "-"
			} else {
				cells = append(cells, strconv.Itoa(n))
			}
		}
		cells = append(cells, strings.Join(r.Devices, ","), strings.Join(r.Files, ","))
		if containers {
			cells = append(cells, ContainerName(r.Place))
		}
		t.Append(cells...)
	}
	return t
}
