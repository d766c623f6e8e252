// Package healthview writes `rdmatrace health`'s answer: a line a
// problem as text, or a JSON array.
package healthview

import (
	"io"
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/health"
)

// VerdictName is how health's verdict is written.
func VerdictName(v health.Status) string {
	switch v {
	case health.OK:
		return "healthy"
	case health.Problem:
		return "unhealthy"
	}
	return "unknown"
}

// WriteText writes health's text. A healthy node gets one line that says
// what was checked and what was not; an unhealthy one a line a problem,
// "check: what" (node-problem-detector shows the first line as the
// condition's message). Then, either way, a line a check that could not
// tell, "check: could not tell: why"; when none could, a line with the
// checks not possible here.
func WriteText(w io.Writer, r *health.Report) error {
	var lines []string
	if r.Verdict == health.OK {
		lines = append(lines, healthyLine(r))
	}
	for _, f := range r.Findings {
		if f.Status == health.Problem {
			lines = append(lines, f.Check+": "+f.Detail)
		}
	}
	for _, f := range r.Findings {
		if f.Status == health.Unknown {
			lines = append(lines, f.Check+": could not tell: "+f.Detail)
		}
	}
	if r.Verdict == health.Unknown {
		if sk := skipped(r); len(sk) != 0 {
			lines = append(lines, "not checked: "+strings.Join(sk, ", "))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(formats.Sanitize(l))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// healthyLine: "healthy: ports, gids, limits; nothing wrong in 10s (from
// ...); not checked: events (why)".
func healthyLine(r *health.Report) string {
	var checked []string
	seen := map[string]bool{}
	for _, f := range r.Findings {
		if f.Status == health.OK && !seen[f.Check] {
			seen[f.Check] = true
			checked = append(checked, f.Check)
		}
	}
	s := "healthy: " + strings.Join(checked, ", ")
	for _, f := range r.Findings {
		if f.Check == "events" && f.Status == health.OK {
			s += "; " + f.Detail
			break
		}
	}
	if sk := skipped(r); len(sk) != 0 {
		s += "; not checked: " + strings.Join(sk, ", ")
	}
	return s
}

// skipped are the checks not possible here or not asked for, with why.
func skipped(r *health.Report) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Status == health.Skipped {
			out = append(out, f.Check+" ("+f.Detail+")")
		}
	}
	return out
}

// Objects are health's JSON: first the verdict (check "node", its status
// healthy, unhealthy or unknown, the exit status and where the window's
// events came from: trace, netlink or none), then an object a finding
// (check, status ok, problem, unknown or skipped, detail).
func Objects(r *health.Report) []formats.Object {
	src := r.Source
	if src == "" {
		src = "none"
	}
	out := []formats.Object{{
		{Key: "check", Kind: formats.Str, Str: "node"},
		{Key: "status", Kind: formats.Str, Str: VerdictName(r.Verdict)},
		{Key: "exit", Kind: formats.Num, Num: uint64(health.ExitCode(r.Verdict))},
		{Key: "events-from", Kind: formats.Str, Str: src},
	}}
	for _, f := range r.Findings {
		out = append(out, formats.Object{
			{Key: "check", Kind: formats.Str, Str: f.Check},
			{Key: "status", Kind: formats.Str, Str: f.Status.String()},
			{Key: "detail", Kind: formats.Str, Str: f.Detail},
		})
	}
	return out
}

// WriteJSON writes Objects as one JSON array.
func WriteJSON(w io.Writer, r *health.Report) error {
	jw := formats.NewJSONArrayWriter(w)
	for _, o := range Objects(r) {
		if err := jw.Write(o); err != nil {
			return err
		}
	}
	return jw.Close()
}
