package formats

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/analysis/doctor"
)

// A Check is one line of a checklist (doctor's findings): its name, its
// status as shown (ok, warn, FAIL, skip), what was found, and the fix of
// one that did not pass. (Not doctor's own type: the doctor package reads
// recordings, whose tests render through formats.)
type Check struct {
	Name, Status, Detail, Fix string
}

// CheckObject is a check's JSON: check, status, detail, fix.
func CheckObject(c *Check) Object {
	o := Object{
		{Key: "check", Kind: Str, Str: c.Name},
		{Key: "status", Kind: Str, Str: strings.ToLower(c.Status)},
		{Key: "detail", Kind: Str, Str: c.Detail},
	}
	if c.Fix != "" {
		o = append(o, Field{Key: "fix", Kind: Str, Str: c.Fix})
	}
	return o
}

// CheckList is doctor's JSON and NDJSON.
var CheckList = List[Check]{Object: CheckObject}

// WriteChecks writes a checklist as text: what was checked (comm[pid]),
// a note, then a line per check and its fix.
func WriteChecks(w io.Writer, comm string, pid int, note string, cs []Check) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s[%d]:\n", Sanitize(comm), pid)
	if note != "" {
		b.WriteString("  " + Sanitize(note) + "\n")
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "  %-4s %-14s%s\n", c.Status, c.Name, Sanitize(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(&b, "       %-14sfix: %s\n", "", Sanitize(c.Fix))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDoctor writes doctor's report in f: text (WriteChecks) or a list
// of checks; the fix of a check that passed is left out.
func WriteDoctor(w io.Writer, f Format, r *doctor.Report) error {
	checks := make([]Check, len(r.Findings))
	for i, c := range r.Findings {
		checks[i] = Check{Name: c.Check, Status: c.Status.String(), Detail: c.Detail}
		if c.Status != doctor.Pass {
			checks[i].Fix = c.Fix
		}
	}
	if f == FormatText {
		return WriteChecks(w, r.Target.Comm, r.Target.PID, r.Note, checks)
	}
	return CheckList.Of(checks).Write(w, f, false)
}
