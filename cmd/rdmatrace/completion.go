package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func init() { commands = append(commands, completionCommand()) }

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Completes commands, options, resource types, filter keys, output formats,\n" +
			"event names and the RDMA devices of /sys/class/infiniband (read at each <TAB>).\n" +
			"The script is made from the same command definitions as --help.\n\n" +
			"EXAMPLES:\n" +
			"   source <(rdmatrace completion bash)\n" +
			"   rdmatrace completion bash > /etc/bash_completion.d/rdmatrace\n" +
			"   rdmatrace completion zsh > \"${fpath[1]}/_rdmatrace\"\n" +
			"   rdmatrace completion fish > ~/.config/fish/completions/rdmatrace.fish\n\n" +
			"EXIT STATUS:\n" + exitStatus("the script could not be written", ""),
		Action: func(c *cli.Context) error {
			if err := maxArgs(c, 1); err != nil {
				return err
			}
			spec := completionSpec()
			switch sh := c.Args().First(); sh {
			case "bash":
				return writeBash(c.App.Writer, spec)
			case "zsh":
				// zsh runs bash's script through bashcompinit: one grammar.
				if _, err := io.WriteString(c.App.Writer, "#compdef rdmatrace\nautoload -U +X bashcompinit && bashcompinit\n"); err != nil {
					return err
				}
				return writeBash(c.App.Writer, spec)
			case "fish":
				return writeFish(c.App.Writer, spec)
			case "":
				return usage(c, "which shell? bash, zsh or fish")
			default:
				return usage(c, "unknown shell %q: expected bash, zsh or fish", sh)
			}
		},
	}
}

// compCommand is what completion knows of one command.
type compCommand struct {
	names []string // name, then aliases
	flags []string // --long and -s forms
	words []string // what may come first: show, types, filter keys
	// keys are the filter keys after a resource type (res: that type's).
	keys map[string][]string
	// values are the names a key takes after a type: "qp:state".
	values map[string][]string
	// devices: its first word may be a device (dev, link, res).
	devices bool
	formats []string
}

type compSpec struct {
	commands []compCommand
	types    []string
	events   []string
}

func completionSpec() compSpec {
	var s compSpec
	for _, t := range rdma.ResourceTypes {
		s.types = append(s.types, t.String())
	}
	for k := rdma.EvCreate; ; k++ {
		if _, err := rdma.ParseEventKind(k.String()); err != nil {
			break
		}
		s.events = append(s.events, k.String())
	}
	s.events = append(s.events, "cm")
	var names []string
	for _, c := range commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	for _, c := range commands {
		if c.Hidden && c.Name != "help" {
			continue
		}
		cc := compCommand{names: append([]string{c.Name}, c.Aliases...), keys: map[string][]string{}}
		for _, f := range c.Flags {
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				continue
			}
			for _, n := range f.Names() {
				cc.flags = append(cc.flags, dashes(n))
			}
		}
		if !slices.Contains(cc.flags, "--help") {
			cc.flags = append(cc.flags, "--help", "-h")
		}
		switch c.Name {
		case "dev", "link":
			cc.words, cc.devices = []string{"show"}, true
		case "res":
			cc.words, cc.devices = append([]string{"show"}, s.types...), true
			for _, t := range rdma.ResourceTypes {
				cc.keys[t.String()] = filter.Keys(t)
			}
			cc.values = enumValues()
		case "trace":
			cc.words = append(append([]string{}, s.types...), filter.EventKeys...)
			for _, t := range s.types {
				cc.keys[t] = filter.EventKeys
			}
		case "completion":
			cc.words = []string{"bash", "zsh", "fish"}
		case "help":
			cc.words = names
		}
		for _, f := range c.Flags {
			if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "output" && sf.Aliases != nil {
				cc.formats = formatsIn(sf.Usage)
			}
		}
		s.commands = append(s.commands, cc)
	}
	sort.Slice(s.commands, func(i, j int) bool { return s.commands[i].names[0] < s.commands[j].names[0] })
	return s
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
		case outTable, outText, outJSON, outNDJSON, outLegacy:
			out = append(out, w)
		}
	}
	return out
}

func join(ws []string) string { return strings.Join(ws, " ") }

// writeBash writes a bash completion function. Devices are read from
// /sys/class/infiniband when <TAB> is pressed, never at generation
// ($RDMATRACE_SYSFS_IB elsewhere, for tests). Completing never runs
// rdmatrace: urfave/cli's hidden flag made `trace --<TAB>` start a trace.
func writeBash(w io.Writer, s compSpec) error {
	var b strings.Builder
	var cmdNames []string
	for _, c := range s.commands {
		if c.names[0] != "help" {
			cmdNames = append(cmdNames, c.names[0])
		}
	}
	b.WriteString(`# bash completion for rdmatrace; generated by rdmatrace completion bash
_rdmatrace() {
    local cur prev cmd i w typ
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        [[ $w == -* || $w == show || $w == list ]] && continue
        if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $typ ]]; then typ=$w; fi
    done
    local devs
    devs=$(command ls "${RDMATRACE_SYSFS_IB:-/sys/class/infiniband}" 2>/dev/null)
    case $prev in
    dev | --filter-dev) COMPREPLY=($(compgen -W "$devs" -- "$cur")); return ;;
    link) COMPREPLY=($(compgen -W "$devs" -- "$cur")); return ;;
    res | --filter-res) [[ -n $cmd && $cmd != res ]] && { COMPREPLY=($(compgen -W "` + join(s.types) + `" -- "$cur")); return; } ;;
    event | --filter-event) COMPREPLY=($(compgen -W "` + join(s.events) + `" -- "$cur")); return ;;
    --log | --recording | --report | --ready-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local flags= words= formats=
    case $cmd in
    "") COMPREPLY=($(compgen -W "` + join(cmdNames) + ` help -j -p -d -V --version --help" -- "$cur")); return ;;
`)
	for _, c := range s.commands {
		fmt.Fprintf(&b, "    %s)\n        flags=%q\n        words=%q\n", strings.Join(c.names, " | "), join(c.flags), join(c.words))
		if len(c.formats) > 0 {
			fmt.Fprintf(&b, "        formats=%q\n", join(c.formats))
		}
		if c.devices {
			b.WriteString("        [[ -z $typ || $typ == show ]] && words=\"$words $devs\"\n")
		}
		if len(c.values) > 0 {
			b.WriteString("        case $typ:$prev in\n")
			for _, k := range sortedKeys(c.values) {
				fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", k, join(c.values[k]))
			}
			b.WriteString("        esac\n")
		}
		if len(c.keys) > 0 {
			b.WriteString("        case $typ in\n")
			var types []string
			for t := range c.keys {
				types = append(types, t)
			}
			sort.Strings(types)
			for _, t := range types {
				fmt.Fprintf(&b, "        %s) words=%q ;;\n", t, join(c.keys[t]))
			}
			b.WriteString("        esac\n")
		}
		b.WriteString("        ;;\n")
	}
	b.WriteString(`    esac
    if [[ $prev == -o || $prev == --output ]] && [[ -n $formats ]]; then
        COMPREPLY=($(compgen -W "$formats" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [[ $cmd == parse || $cmd == leaks ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}
complete -F _rdmatrace rdmatrace
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFish writes fish completions: one complete line per command, flag
// and word.
func writeFish(w io.Writer, s compSpec) error {
	var b strings.Builder
	b.WriteString("# fish completion for rdmatrace; generated by rdmatrace completion fish\n")
	b.WriteString("function __rdmatrace_devices; command ls /sys/class/infiniband 2>/dev/null; end\n")
	b.WriteString("function __rdmatrace_prev; set -l t (commandline -opc); test (count $t) -gt 0; and contains -- $t[-1] $argv; end\n")
	b.WriteString("complete -c rdmatrace -f\n")
	b.WriteString("complete -c rdmatrace -n __fish_use_subcommand -s V -l version -d 'print the version'\n")
	for _, c := range s.commands {
		if c.names[0] == "help" {
			continue
		}
		fmt.Fprintf(&b, "complete -c rdmatrace -n __fish_use_subcommand -a %s\n", c.names[0])
	}
	for _, c := range s.commands {
		cond := "'__fish_seen_subcommand_from " + join(c.names) + "'"
		for _, f := range c.flags {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(&b, "complete -c rdmatrace -n %s -l %s\n", cond, f[2:])
			} else {
				fmt.Fprintf(&b, "complete -c rdmatrace -n %s -s %s\n", cond, f[1:])
			}
		}
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -a '%s'\n", cond, join(c.words))
		}
		for _, t := range sortedKeys(c.keys) {
			fmt.Fprintf(&b, "complete -c rdmatrace -n '__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s' -a '%s'\n",
				join(c.names), t, join(c.keys[t]))
		}
		for _, k := range sortedKeys(c.values) {
			typ, key, _ := strings.Cut(k, ":")
			fmt.Fprintf(&b, "complete -c rdmatrace -n '__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s; and __rdmatrace_prev %s' -a '%s'\n",
				join(c.names), typ, key, join(c.values[k]))
		}
		if c.devices {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -a '(__rdmatrace_devices)'\n", cond)
		}
		if len(c.formats) > 0 {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -s o -l output -x -a '%s'\n", cond, join(c.formats))
		}
		if c.names[0] == "parse" || c.names[0] == "leaks" {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -F\n", cond)
		}
	}
	b.WriteString("complete -c rdmatrace -l filter-dev -x -a '(__rdmatrace_devices)'\n")
	fmt.Fprintf(&b, "complete -c rdmatrace -l filter-res -x -a '%s'\n", join(s.types))
	fmt.Fprintf(&b, "complete -c rdmatrace -l filter-event -x -a '%s'\n", join(s.events))
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
