package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// completionDir is a folder with two recordings, where completion runs:
// file completion offers them.
func completionDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"rec.ndjson", "rec2.ndjson"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// What each shell must offer where a command's grammar changes: files
// after a file flag, a program after --, nothing after a number, stat's
// and system's words. Failed before: resource types after -w, filter words
// after --, nothing after stat qp and system set.
var completionCases = []struct {
	line string
	want []string // all offered, in any order
	not  []string // none of these offered
}{
	{"rdmatrace trace -w ", []string{"rec.ndjson", "rec2.ndjson"}, []string{"qp", "cm_id"}},
	{"rdmatrace trace -r rec", []string{"rec.ndjson", "rec2.ndjson"}, nil},
	{"rdmatrace trace --write ", []string{"rec.ndjson"}, []string{"qp"}},
	{"rdmatrace leaks --log ", []string{"rec.ndjson"}, []string{"qp"}},
	{"rdmatrace trace -w out.ndjson qp ", []string{"pid", "comm"}, []string{"rec.ndjson"}},
	{"rdmatrace trace qp -- rpin", []string{"rping"}, []string{"pid", "cgroup", "container"}},
	{"rdmatrace leaks -- ", nil, []string{"pid", "--filter-pid", "qp"}},
	{"rdmatrace trace -c ", nil, []string{"qp", "pid"}},
	{"rdmatrace stat ", []string{"show", "qp", "link"}, nil},
	{"rdmatrace stat qp ", []string{"show", "mode", "link"}, []string{"qp"}},
	{"rdmatrace system ", []string{"show", "set"}, nil},
	{"rdmatrace system set ", []string{"netns"}, []string{"set"}},
	{"rdmatrace system set netns ", []string{"shared", "exclusive"}, nil},
	{"rdmatrace sys set netns ", []string{"shared", "exclusive"}, nil},
	{"rdmatrace st qp ", []string{"mode"}, nil},
}

func TestBashCompletesFilesProgramsAndSubwords(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("rping"); err != nil {
		t.Skip("no rping on PATH to complete as a program (guest/setup-host.sh installs it)")
	}
	script, _, _ := rdmatrace(t, "completion", "bash")
	dir := completionDir(t)
	for _, tc := range completionCases {
		words := strings.Split(tc.line, " ")
		var q []string
		for _, w := range words {
			q = append(q, strconv.Quote(w))
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(q, " ") + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"; _rdmatrace; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		checkOffered(t, "bash", tc.line, string(out), err, tc.want, tc.not)
	}
}

// zsh runs bash's script through bashcompinit; zsh itself then keeps the
// candidates that match what is typed, so only what is offered counts.
func TestZshCompletesFilesProgramsAndSubwords(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed (guest/setup-host.sh installs it)")
	}
	if _, err := exec.LookPath("rping"); err != nil {
		t.Skip("no rping on PATH to complete as a program")
	}
	script, _, _ := rdmatrace(t, "completion", "zsh")
	dir := completionDir(t)
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "zsh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range completionCases {
		words := strings.Split(tc.line, " ")
		var q []string
		for _, w := range words {
			q = append(q, "'"+w+"'")
		}
		cmd := exec.Command(zsh, "-f", "-c", "autoload -U compinit && compinit -u -d "+filepath.Join(tmp, "zcompdump")+
			"; source "+filepath.Join(tmp, "zsh")+
			"; emulate sh -c 'COMP_WORDS=("+strings.Join(q, " ")+"); COMP_CWORD="+strconv.Itoa(len(words)-1)+
			"; _rdmatrace; printf \"%s\\n\" \"${COMPREPLY[@]}\"'")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		checkOffered(t, "zsh", tc.line, string(out), err, tc.want, tc.not)
	}
}

func TestFishCompletesFilesProgramsAndSubwords(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed (guest/setup-host.sh installs it)")
	}
	script, _, _ := rdmatrace(t, "completion", "fish")
	dir := completionDir(t)
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "fish"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := append(completionCases[:0:0], completionCases...)
	// fish completes a program's own arguments by its completions.
	cases = append(cases, struct {
		line      string
		want, not []string
	}{"rdmatrace trace qp -- myprog ", []string{"red", "green"}, []string{"pid", "rec.ndjson"}})
	for _, tc := range cases {
		if strings.Contains(tc.line, "rpin") {
			if _, err := exec.LookPath("rping"); err != nil {
				continue
			}
		}
		cmd := exec.Command(fish, "--no-config", "-c", "source "+filepath.Join(tmp, "fish")+
			"; complete -c myprog -x -a 'red green'; complete -C "+strconv.Quote(tc.line))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var words []string
		for _, line := range strings.Split(string(out), "\n") {
			w, _, _ := strings.Cut(line, "\t") // a description follows a tab
			words = append(words, w)
		}
		checkOffered(t, "fish", tc.line, strings.Join(words, "\n"), err, tc.want, tc.not)
	}
}

func checkOffered(t *testing.T, shell, line, out string, err error, want, not []string) {
	t.Helper()
	got := strings.Fields(out)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %q<TAB> offers %q (%v), without %q", shell, line, got, err, w)
		}
	}
	for _, w := range not {
		if slices.Contains(got, w) {
			t.Errorf("%s: %q<TAB> offers %q, which it should not", shell, line, w)
		}
	}
}
