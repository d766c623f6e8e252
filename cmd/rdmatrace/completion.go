package main

import (
	"fmt"
	"io"
	"maps"
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
		Description: "Completes commands (and rdma's abbreviations of them), options, resource types,\n" +
			"filter keys, output formats, event names, stat's and system's words, files after the\n" +
			"options that take one (-w, -r, --log...), the program and its arguments after --,\n" +
			"and the RDMA devices of /sys/class/infiniband (read at each <TAB>).\n" +
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
	// abbrevs are the abbreviations rdma takes for it (sys, st), which
	// rdmatrace takes too: the command is known by them, never offered.
	abbrevs []string
	flags   []string // --long and -s forms
	// fileFlags take a file (-w, --log); valueFlags take any other value
	// (--count, -p PID), after which no word of the command is offered.
	fileFlags, valueFlags []string
	// flagDefs are the visible flags, for fish's one line per flag.
	flagDefs []cli.Flag
	words    []string // what may come first: show, types, filter keys
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
	// preValues: flags that take a value before the command, as
	// hoistFlags reads them (-o json res).
	preValues []string
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
	s.events = append(s.events, "cm", filter.WordCMError, filter.WordFailure)
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
		cc := compCommand{names: append([]string{c.Name}, c.Aliases...), keys: map[string][]string{}, values: map[string][]string{}}
		cc.abbrevs = abbreviations(c)
		for _, f := range c.Flags {
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				continue
			}
			cc.flagDefs = append(cc.flagDefs, f)
			kind := flagValueKind(f)
			for _, n := range f.Names() {
				cc.flags = append(cc.flags, dashes(n))
				switch kind {
				case "file":
					cc.fileFlags = append(cc.fileFlags, dashes(n))
				case "value":
					cc.valueFlags = append(cc.valueFlags, dashes(n))
				}
				if kind != "" && n != "p" && !slices.Contains(s.preValues, dashes(n)) {
					s.preValues = append(s.preValues, dashes(n))
				}
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
			maps.Copy(cc.values, enumValues())
		case "trace":
			cc.words = append(append([]string{}, s.types...), filter.EventKeys...)
			for _, t := range s.types {
				cc.keys[t] = filter.EventKeys
			}
		case "stat":
			// rdma statistic's words: [qp [mode]] [show] [link DEV[/PORT]].
			cc.words = []string{"show", "qp", "link"}
			cc.keys["qp"] = []string{"show", "mode", "link"}
		case "system":
			cc.words = []string{"show", "set"}
			cc.keys["set"] = []string{"netns"}
			cc.values["set:netns"] = []string{"shared", "exclusive"}
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
	sort.Strings(s.preValues)
	return s
}

// abbreviations are the prefixes of c's names that rdma (and so
// rdmatrace, in hoistFlags) reads as c.
func abbreviations(c *cli.Command) []string {
	var out []string
	for _, name := range c.Names() {
		for i := 1; i < len(name); i++ {
			if full := rdmaAbbrev(name[:i], commands); full != "" && c.HasName(full) && !slices.Contains(out, name[:i]) {
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
	label := func(c compCommand) string {
		return strings.Join(append(append([]string{}, c.names...), c.abbrevs...), " | ")
	}
	b.WriteString(`# bash completion for rdmatrace; generated by rdmatrace completion bash

# _rdmatrace_value CMD WORD: whether WORD is a flag of CMD that takes a
# value (the next word is its value, not an argument).
_rdmatrace_value() {
    case $1 in
    "") case $2 in ` + strings.Join(s.preValues, " | ") + `) return 0 ;; esac ;;
`)
	for _, c := range s.commands {
		if vs := append(append([]string{}, c.fileFlags...), c.valueFlags...); len(vs) > 0 {
			fmt.Fprintf(&b, "    %s) case $2 in %s) return 0 ;; esac ;;\n", label(c), strings.Join(vs, " | "))
		}
	}
	b.WriteString(`    esac
    return 1
}

_rdmatrace() {
    local cur prev cmd i w typ dd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd= typ= dd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == -- ]]; then dd=$i; break; fi
        if [[ $w == -* ]]; then
            [[ $w != *=* ]] && _rdmatrace_value "$cmd" "$w" && ((i++))
            continue
        fi
        [[ $w == show || $w == list ]] && continue
        if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $typ ]]; then typ=$w; fi
    done
    if [[ -n $dd ]]; then
        # After --: the program to run, then its arguments.
        if ((COMP_CWORD == dd + 1)) && [[ $cur != */* ]]; then
            COMPREPLY=($(compgen -c -- "$cur" | sort -u))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    local devs
    devs=$(command ls "${RDMATRACE_SYSFS_IB:-/sys/class/infiniband}" 2>/dev/null)
    case $prev in
    dev | --filter-dev | --dev) COMPREPLY=($(compgen -W "$devs" -- "$cur")); return ;;
    link) COMPREPLY=($(compgen -W "$devs" -- "$cur")); return ;;
    res | --filter-res) [[ -n $cmd && $cmd != res ]] && { COMPREPLY=($(compgen -W "` + join(s.types) + `" -- "$cur")); return; } ;;
    event | --filter-event) COMPREPLY=($(compgen -W "` + join(s.events) + `" -- "$cur")); return ;;
    esac
    local flags= words= formats= files= values=
    case $cmd in
    "") COMPREPLY=($(compgen -W "` + join(cmdNames) + ` help -j -p -d -V --version --help" -- "$cur")); return ;;
`)
	for _, c := range s.commands {
		fmt.Fprintf(&b, "    %s)\n        flags=%q\n        words=%q\n", label(c), join(c.flags), join(c.words))
		if len(c.fileFlags) > 0 {
			fmt.Fprintf(&b, "        files=%q\n", join(c.fileFlags))
		}
		if len(c.valueFlags) > 0 {
			fmt.Fprintf(&b, "        values=%q\n", join(c.valueFlags))
		}
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
			for _, t := range sortedKeys(c.keys) {
				fmt.Fprintf(&b, "        %s) words=%q ;;\n", t, join(c.keys[t]))
			}
			b.WriteString("        esac\n")
		}
		b.WriteString("        ;;\n")
	}
	b.WriteString(`    esac
    if [[ " $files " == *" $prev "* ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ $prev == -o || $prev == --output ]] && [[ -n $formats ]]; then
        COMPREPLY=($(compgen -W "$formats" -- "$cur"))
    elif [[ " $values " == *" $prev "* ]]; then
        COMPREPLY=() # a number, a duration, a name: nothing to offer
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
// and word. Each command's lines hold until a "--", after which the
// program to run and its own arguments are completed.
func writeFish(w io.Writer, s compSpec) error {
	var b strings.Builder
	b.WriteString(`# fish completion for rdmatrace; generated by rdmatrace completion fish
function __rdmatrace_devices; command ls /sys/class/infiniband 2>/dev/null; end
function __rdmatrace_prev; set -l t (commandline -opc); test (count $t) -gt 0; and contains -- $t[-1] $argv; end
# __rdmatrace_dd: a "--" was typed; what follows is a program and its arguments.
function __rdmatrace_dd; contains -- -- (commandline -opc); end
# __rdmatrace_cmd NAME...: the command (the first word that is no option) is one of these.
function __rdmatrace_cmd
    set -l t (commandline -opc)
    set -e t[1]
    for w in $t
        switch $w
            case --
                return 1
            case '-*'
                continue
            case '*'
                contains -- $w $argv
                return
        end
    end
    return 1
end
# __rdmatrace_first: no word has been typed after the command yet (show aside).
function __rdmatrace_first
    set -l t (commandline -opc)
    set -e t[1]
    set -l n 0
    for w in $t
        switch $w
            case --
                return 1
            case '-*' show list
                continue
            case '*'
                set n (math $n + 1)
        end
    end
    test $n -le 1
end
# __rdmatrace_program: completes what follows "--" as fish completes it alone.
function __rdmatrace_program
    set -l rest
    set -l seen 0
    for w in (commandline -opc)
        if test $seen = 1
            set -a rest $w
        else if test "$w" = --
            set seen 1
        end
    end
    if test (count $rest) -eq 0
        __fish_complete_command
    else
        complete -C (string join ' ' -- (string escape -- $rest))" "(commandline -ct)
    end
end
complete -c rdmatrace -f
complete -c rdmatrace -n __rdmatrace_dd -a '(__rdmatrace_program)'
complete -c rdmatrace -n __fish_use_subcommand -s V -l version -d 'print the version'
`)
	for _, c := range s.commands {
		if c.names[0] == "help" {
			continue
		}
		fmt.Fprintf(&b, "complete -c rdmatrace -n __fish_use_subcommand -a %s\n", c.names[0])
	}
	for _, c := range s.commands {
		is := "__rdmatrace_cmd " + join(append(append([]string{}, c.names...), c.abbrevs...)) + "; and not __rdmatrace_dd"
		cond := "'" + is + "'"
		for _, f := range c.flagDefs {
			var spec []string
			for _, n := range f.Names() {
				if len(n) == 1 {
					spec = append(spec, "-s "+n)
				} else {
					spec = append(spec, "-l "+n)
				}
			}
			switch flagValueKind(f) {
			case "file":
				spec = append(spec, "-r -F")
			case "value":
				spec = append(spec, "-x")
			}
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s %s\n", cond, strings.Join(spec, " "))
		}
		if !slices.Contains(c.flags, "--help") || len(c.flagDefs) == 0 {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -s h -l help\n", cond)
		}
		first := "'" + is + "; and __rdmatrace_first'"
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -a '%s'\n", first, join(c.words))
		}
		for _, t := range sortedKeys(c.keys) {
			fmt.Fprintf(&b, "complete -c rdmatrace -n '%s; and __fish_seen_subcommand_from %s' -a '%s'\n", is, t, join(c.keys[t]))
		}
		for _, k := range sortedKeys(c.values) {
			typ, key, _ := strings.Cut(k, ":")
			fmt.Fprintf(&b, "complete -c rdmatrace -n '%s; and __fish_seen_subcommand_from %s; and __rdmatrace_prev %s' -a '%s'\n",
				is, typ, key, join(c.values[k]))
		}
		if c.devices {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -a '(__rdmatrace_devices)'\n", first)
		}
		if len(c.formats) > 0 {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -s o -l output -x -a '%s'\n", cond, join(c.formats))
		}
		if c.names[0] == "parse" || c.names[0] == "leaks" {
			fmt.Fprintf(&b, "complete -c rdmatrace -n %s -F\n", cond)
		}
	}
	b.WriteString("complete -c rdmatrace -n 'not __rdmatrace_dd; and __rdmatrace_prev link dev' -x -a '(__rdmatrace_devices)'\n")
	b.WriteString("complete -c rdmatrace -n 'not __rdmatrace_dd' -l filter-dev -x -a '(__rdmatrace_devices)'\n")
	fmt.Fprintf(&b, "complete -c rdmatrace -n 'not __rdmatrace_dd' -l filter-res -x -a '%s'\n", join(s.types))
	fmt.Fprintf(&b, "complete -c rdmatrace -n 'not __rdmatrace_dd' -l filter-event -x -a '%s'\n", join(s.events))
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
