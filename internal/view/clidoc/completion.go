// Package clidoc writes what rdmatrace's command line documents from its
// command definitions (urfave/cli's, as --help reads them): the shells'
// completion scripts and the rdmatrace(8) man page.
package clidoc

import (
	_ "embed"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/base/cliargs"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// compCommand is what completion knows of one command; its fields are
// what the templates read.
type compCommand struct {
	Names []string // name, then aliases
	// Abbrevs are the abbreviations rdma takes for it (sys, st), which
	// rdmatrace takes too: the command is known by them, never offered.
	Abbrevs []string
	Flags   []string // --long and -s forms
	// FileFlags take a file (-w, --log); ValueFlags take any other value
	// (--count, -p PID), after which no word of the command is offered.
	FileFlags, ValueFlags []string
	// FishFlags are fish's spec of each visible flag (-s n -l name -x).
	FishFlags []string
	// FishHelp: fish is told of -h, --help (urfave/cli adds them).
	FishHelp bool
	Words    []string // what may come first: show, types, filter keys
	// Keys are the filter keys after a resource type (res: that type's).
	Keys []compWords
	// Values are the names a key takes after a type: "qp:state".
	Values []compWords
	// Devices: its first word may be a device (dev, link, res).
	Devices bool
	// FileArgs: its arguments are files (parse, leaks).
	FileArgs bool
	Formats  []string
}

// compWords are the words offered after Key (Type:Name for a value).
type compWords struct {
	Key, Type, Name string
	Words           []string
}

// Name is the command's own name.
func (c compCommand) Name() string { return c.Names[0] }

// Label is the command's names as a case pattern of bash.
func (c compCommand) Label() string {
	return strings.Join(append(append([]string{}, c.Names...), c.Abbrevs...), " | ")
}

// TakesValue are the flags whose next word is their value.
func (c compCommand) TakesValue() []string {
	return append(append([]string{}, c.FileFlags...), c.ValueFlags...)
}

// FishIs is fish's condition for the command's lines.
func (c compCommand) FishIs() string {
	return "__rdmatrace_cmd " + join(append(append([]string{}, c.Names...), c.Abbrevs...)) + "; and not __rdmatrace_dd"
}

type compSpec struct {
	Commands []compCommand
	Types    []string
	Events   []string
	// PreValues: flags that take a value before the command, as
	// hoistFlags reads them (-o json res).
	PreValues []string
}

// CommandNames are the commands offered first.
func (s compSpec) CommandNames() []string {
	var out []string
	for _, c := range s.Commands {
		if c.Name() != "help" {
			out = append(out, c.Name())
		}
	}
	return out
}

func completionSpec(g cliargs.Grammar) compSpec {
	var s compSpec
	for _, t := range rdma.ResourceTypes {
		s.Types = append(s.Types, t.String())
	}
	for k := rdma.EvCreate; ; k++ {
		if _, err := rdma.ParseEventKind(k.String()); err != nil {
			break
		}
		s.Events = append(s.Events, k.String())
	}
	s.Events = append(s.Events, "cm", filter.WordCMError, filter.WordFailure)
	var names []string
	for _, c := range g.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	for _, c := range g.Commands {
		if c.Hidden && c.Name != "help" {
			continue
		}
		cc := compCommand{Names: append([]string{c.Name}, c.Aliases...), Abbrevs: abbreviations(c, g)}
		s.PreValues = compFlags(&cc, c, s.PreValues)
		compWordsOf(&cc, c.Name, s.Types, names)
		s.Commands = append(s.Commands, cc)
	}
	sort.Slice(s.Commands, func(i, j int) bool { return s.Commands[i].Names[0] < s.Commands[j].Names[0] })
	sort.Strings(s.PreValues)
	return s
}

// compFlags fills in c's flags, and adds those that take a value to
// preValues.
func compFlags(cc *compCommand, c *cli.Command, preValues []string) []string {
	visible := 0
	for _, f := range c.Flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		visible++
		kind := flagValueKind(f)
		var fish []string
		for _, n := range f.Names() {
			cc.Flags = append(cc.Flags, cliargs.Dashes(n))
			switch kind {
			case "file":
				cc.FileFlags = append(cc.FileFlags, cliargs.Dashes(n))
			case "value":
				cc.ValueFlags = append(cc.ValueFlags, cliargs.Dashes(n))
			}
			if kind != "" && n != "p" && !slices.Contains(preValues, cliargs.Dashes(n)) {
				preValues = append(preValues, cliargs.Dashes(n))
			}
			if len(n) == 1 {
				fish = append(fish, "-s "+n)
			} else {
				fish = append(fish, "-l "+n)
			}
		}
		switch kind {
		case "file":
			fish = append(fish, "-r -F")
		case "value":
			fish = append(fish, "-x")
		}
		cc.FishFlags = append(cc.FishFlags, strings.Join(fish, " "))
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "output" && sf.Aliases != nil {
			cc.Formats = formatsIn(sf.Usage)
		}
	}
	cc.FishHelp = visible == 0 // urfave/cli adds -h, --help to commands with flags
	if !slices.Contains(cc.Flags, "--help") {
		cc.Flags = append(cc.Flags, "--help", "-h")
	}
	return preValues
}

// compWordsOf fills in the words command name takes: its grammar.
func compWordsOf(cc *compCommand, name string, types, names []string) {
	keys, values := map[string][]string{}, map[string][]string{}
	switch name {
	case "dev", "link":
		cc.Words, cc.Devices = []string{"show"}, true
	case "res":
		cc.Words, cc.Devices = append([]string{"show"}, types...), true
		for _, t := range rdma.ResourceTypes {
			keys[t.String()] = filter.Keys(t)
		}
		maps.Copy(values, enumValues())
	case "trace":
		cc.Words = append(append([]string{}, types...), filter.EventKeys...)
		for _, t := range types {
			keys[t] = filter.EventKeys
		}
	case "stat":
		// rdma statistic's words: [qp [mode]] [show] [link DEV[/PORT]].
		cc.Words = []string{"show", "qp", "link"}
		keys["qp"] = []string{"show", "mode", "link"}
	case "system":
		cc.Words = []string{"show", "set"}
		keys["set"] = []string{"netns"}
		values["set:netns"] = []string{"shared", "exclusive"}
	case "completion":
		cc.Words = []string{"bash", "zsh", "fish"}
	case "help":
		cc.Words = names
	case "parse", "leaks":
		cc.FileArgs = true
	}
	for _, k := range sortedKeys(keys) {
		cc.Keys = append(cc.Keys, compWords{Key: k, Words: keys[k]})
	}
	for _, k := range sortedKeys(values) {
		typ, key, _ := strings.Cut(k, ":")
		cc.Values = append(cc.Values, compWords{Key: k, Type: typ, Name: key, Words: values[k]})
	}
}

// abbreviations are the prefixes of c's names that rdma (and so
// rdmatrace, in cliargs.Grammar.Hoist) reads as c.
func abbreviations(c *cli.Command, g cliargs.Grammar) []string {
	var out []string
	for _, name := range c.Names() {
		for i := 1; i < len(name); i++ {
			if full := g.Abbrev(name[:i]); full != "" && c.HasName(full) && !slices.Contains(out, name[:i]) {
				out = append(out, name[:i])
			}
		}
	}
	return out
}

// flagValueKind says what a flag takes: "file" (its value placeholder is
// FILE or PATH: -w, --log, --ready-file), "value" (anything else), or ""
// (a switch).
func flagValueKind(f cli.Flag) string {
	if _, ok := f.(*cli.BoolFlag); ok {
		return ""
	}
	if df, ok := f.(cli.DocGenerationFlag); ok {
		u := df.GetUsage()
		if strings.Contains(u, "`FILE`") || strings.Contains(u, "`PATH`") {
			return "file"
		}
	}
	return "value"
}

// enumValues are the names each type's enum filter keys take, from the
// lists their parsers check against.
func enumValues() map[string][]string {
	list := func(s string) []string { return strings.Split(s, ", ") }
	return map[string][]string{
		"qp:type": list(rdma.QPTypeNames()), "qp:state": list(rdma.QPStateNames()),
		"qp:path-mig-state": list(rdma.PathMigStateNames()),
		"cm_id:qp-type":     list(rdma.QPTypeNames()), "cm_id:state": list(rdma.CMStateNames()),
		"cm_id:ps": list(rdma.PortSpaceNames()), "cq:poll-ctx": list(rdma.PollCtxNames()),
		"srq:type": list(rdma.SRQTypeNames()),
	}
}

// formatsIn reads the formats a -o usage lists: "output FORMAT: table,
// text, json" gives table, text, json.
func formatsIn(usage string) []string {
	_, list, _ := strings.Cut(usage, ": ")
	var out []string
	for _, w := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '(' || r == ')' }) {
		switch w {
		case "table", "text", "json", "ndjson", "legacy":
			out = append(out, w)
		}
	}
	return out
}

func join(ws []string) string { return strings.Join(ws, " ") }

// The scripts, as bpf2go's gen/output.tpl: bash's completion function
// (devices are read from /sys/class/infiniband when <TAB> is pressed,
// never at generation, $RDMATRACE_SYSFS_IB elsewhere for tests; completing
// never runs rdmatrace: urfave/cli's hidden flag made `trace --<TAB>`
// start a trace), and fish's complete lines, each command's holding until
// a "--", after which the program to run and its own arguments are
// completed.
var (
	//go:embed completion.bash.tmpl
	bashTemplate string
	//go:embed completion.fish.tmpl
	fishTemplate string

	completionTemplates = template.Must(template.New("bash").Funcs(template.FuncMap{
		"join": join,
		"alt":  func(ws []string) string { return strings.Join(ws, " | ") },
	}).Parse(bashTemplate))
	_ = template.Must(completionTemplates.New("fish").Parse(fishTemplate))
)

// Completion writes shell's completion script (bash, zsh or fish) for
// the commands of g, made from their definitions as --help is.
func Completion(w io.Writer, shell string, g cliargs.Grammar) error {
	s := completionSpec(g)
	if shell == "zsh" {
		// zsh runs bash's script through bashcompinit: one grammar.
		if _, err := io.WriteString(w, "#compdef rdmatrace\nautoload -U +X bashcompinit && bashcompinit\n"); err != nil {
			return err
		}
		shell = "bash"
	}
	return completionTemplates.ExecuteTemplate(w, shell, s)
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
