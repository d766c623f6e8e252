package ps

import (
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// Listing is what ps shows: a row per owner, the note of the owners whose
// open files could not be read ("" when all could), and what the kernel's
// dump could not give (shown after the rows, exit status 1).
type Listing struct {
	Rows    []Row
	Note    string
	Partial error
}

// List is ps' use case: the resources of each type that its filter keeps,
// from one RDMA netlink dump, their owners named by one enricher (a
// filter's pid PID selects the process and every thread of it).
func List(filters map[rdma.ResType]*filter.Filter) (Listing, error) {
	x := enrich.New(enrich.Options{})
	for _, f := range filters {
		f.SelectProcesses(x)
	}
	cl, err := nldev.Dial()
	if err != nil {
		return Listing{}, err
	}
	defer cl.Close()
	inv := cl.Inventory(nldev.InventoryOptions{Owners: x, Keep: func(r *rdma.Resource) bool { return filters[r.Type].Match(r) }})
	// Older kernels dump no ctx or srq: "-" in the table, no key in JSON.
	rows := Rows(inv.Resources, x, "", inv.Unknown...)
	return Listing{Rows: rows, Note: UnreadableNote(Unreadable(rows, "")), Partial: inv.Partial()}, nil
}
