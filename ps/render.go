package ps

import (
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/rdma"
)

// Object is a row with `rdma res`'s key names where they exist (pid,
// comm, and each type's name as the count of it).
func Object(r *Row) formats.Object {
	var o formats.Object
	if r.Module != "" {
		o = append(o, formats.Field{Key: "kern-name", Kind: formats.Str, Str: r.Module})
	} else {
		o = append(o, formats.Field{Key: "pid", Kind: formats.Num, Num: uint64(r.PID)},
			formats.Field{Key: "comm", Kind: formats.Str, Str: r.Comm})
		o = formats.AppendPlace(o, r.Place)
	}
	for i, t := range rdma.ResourceTypes {
		if r.Counts[i] >= 0 { // -1: the kernel cannot tell
			o = append(o, formats.Field{Key: t.String(), Kind: formats.Num, Num: uint64(r.Counts[i])})
		}
	}
	o = append(o, formats.Field{Key: "devices", Kind: formats.StrList, List: nonNil(r.Devices)})
	if r.Module == "" {
		o = append(o, formats.Field{Key: "files", Kind: formats.StrList, List: nonNil(r.Files)})
	}
	return o
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Table lays rows out as lsof would: one line per holder, kernel users as
// [module].
func Table(rows []Row) *formats.Table {
	head := []string{"PID", "COMMAND"}
	for _, t := range rdma.ResourceTypes {
		head = append(head, strings.ToUpper(t.String()))
	}
	head = append(head, "DEVICES", "FILES")
	containers := false
	for i := range rows {
		containers = containers || formats.ContainerName(rows[i].Place) != ""
	}
	if containers {
		head = append(head, "CONTAINER")
	}
	t := formats.NewTable(head...)
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
			cells = append(cells, formats.ContainerName(r.Place))
		}
		t.Append(cells...)
	}
	return t
}
