package rdma

import (
	"strconv"
	"strings"
)

// CallFrame is one frame of a user-space call stack: where a return address
// points, as the binary's symbol table and line table name it. Func and
// File are empty where the binary has no symbols or no DWARF; Binary,
// Offset (in the file) and BuildID always say where it points, so that it
// can be symbolized later.
type CallFrame struct {
	Func    string `json:"func,omitempty"`     // the function, e.g. setup_conn
	File    string `json:"file,omitempty"`     // the source file, as DWARF names it
	Line    int    `json:"line,omitempty"`     // 0: unknown
	Binary  string `json:"binary"`             // the file's path, as the process mapped it
	Offset  uint64 `json:"offset"`             // the address's offset in that file
	BuildID string `json:"build-id,omitempty"` // lower-case hex of .note.gnu.build-id; "" when it has none
}

// String is "func (file:line)", "func (binary+0xoff)" without lines, or
// "binary+0xoff (build-id ...)" without symbols.
func (f CallFrame) String() string {
	var b strings.Builder
	switch {
	case f.Func != "" && f.File != "":
		b.WriteString(f.Func + " (" + baseName(f.File))
		if f.Line > 0 {
			b.WriteString(":" + strconv.Itoa(f.Line))
		}
		b.WriteString(")")
	case f.Func != "":
		b.WriteString(f.Func + " (" + f.Place() + ")")
	default:
		b.WriteString(f.Place())
		if f.BuildID != "" {
			b.WriteString(" (build-id " + f.BuildID + ")")
		}
	}
	return b.String()
}

// Place is "binary+0xoffset", the binary by its base name.
func (f CallFrame) Place() string {
	return baseName(f.Binary) + "+0x" + strconv.FormatUint(f.Offset, 16)
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// CallStack is where a user-space object was created: the call site in the
// program (Frames[0], the return address of the library function's
// caller) and the callers above it, outermost last.
type CallStack struct {
	// Via is the library function the program called (ibv_create_qp,
	// rdma_create_id, ...).
	Via    string
	Frames []CallFrame
	// Partial says why the walk stopped before the stack's bottom, when
	// it did: frames above a function built without frame pointers
	// cannot be told from data, so none is guessed.
	Partial string
}

// Site is the call site, the first frame; the zero CallFrame for no frames.
func (s *CallStack) Site() CallFrame {
	if s == nil || len(s.Frames) == 0 {
		return CallFrame{}
	}
	return s.Frames[0]
}

// Key identifies a call site for grouping: its binary and offset (build-id
// when known) and the function that was called.
func (s *CallStack) Key() string {
	if s == nil || len(s.Frames) == 0 {
		return ""
	}
	f := s.Frames[0]
	id := f.BuildID
	if id == "" {
		id = f.Binary
	}
	return id + "+" + strconv.FormatUint(f.Offset, 16) + " " + s.Via
}

// CallSiteLeaks is what one call site in a program left: N resources of
// type Res, created by the calls at Stack's first frame (the frames above
// are the first such call's).
type CallSiteLeaks struct {
	Stack *CallStack
	Res   ResType
	N     int
}

// ByCallSite groups the leak findings that know where their resource was
// created (--stacks) by call site and type, as valgrind sums up the
// blocks lost at one place: the largest groups first, then in the order
// of their first finding. Findings without a stack are left out.
func ByCallSite(fs []*Finding) []CallSiteLeaks {
	type key struct {
		site string
		res  ResType
	}
	at := map[key]int{}
	var out []CallSiteLeaks
	for _, f := range fs {
		st := f.Res.Stack
		if st == nil || len(st.Frames) == 0 || !f.Report.IsLeak() {
			continue
		}
		k := key{st.Key(), f.Res.Type}
		if i, ok := at[k]; ok {
			out[i].N++
			continue
		}
		at[k] = len(out)
		out = append(out, CallSiteLeaks{Stack: st, Res: f.Res.Type, N: 1})
	}
	// A stable insertion sort: the groups are few.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].N > out[j-1].N; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
