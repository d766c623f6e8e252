package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// goldenCLI compares got with testdata/cli/name (-update rewrites it).
func goldenCLI(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("..", "..", "testdata", "cli", name), []byte(got))
}

// Every --help, rdmatrace's and each command's, with its exit status:
// EXAMPLES and EXIT STATUS in each, no value placeholder made of a
// backquoted `rdma -d`.
func TestHelpGoldens(t *testing.T) {
	all := [][]string{{"--help"}, {"help"}}
	for _, cmd := range commands { // every command: a new one gets its golden
		if !cmd.Hidden {
			all = append(all, []string{cmd.Name, "--help"})
		}
	}
	for _, args := range all {
		stdout, stderr, code := rdmatrace(t, args...)
		name := "help-" + args[0]
		switch args[0] {
		case "--help":
			name = "help"
		case "help":
			name = "help-command" // the same text as --help
		}
		// The version depends on how the test binary was built.
		stdout = strings.Replace(stdout, "VERSION:\n   "+versionString()+"\n", "VERSION:\n   (the build's)\n", 1)
		goldenCLI(t, name+".txt", stdout+"--- stderr\n"+stderr+"--- exit status "+strconv.Itoa(code)+"\n")
		if code != 0 || stderr != "" {
			t.Errorf("rdmatrace %v: exit %d, stderr %q", args, code, stderr)
		}
		if strings.Contains(stdout, "rdma -d value") || strings.Contains(stdout, "details rdma") {
			t.Errorf("rdmatrace %v: a placeholder made of `rdma -d`:\n%s", args, stdout)
		}
		if args[0] != "--help" && args[0] != "help" && (!strings.Contains(stdout, "EXAMPLES:") || !strings.Contains(stdout, "EXIT STATUS:")) {
			t.Errorf("rdmatrace %v: no EXAMPLES or EXIT STATUS", args)
		}
	}
}

func TestCompletionGoldens(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		stdout, stderr, code := rdmatrace(t, "completion", sh)
		if code != 0 || stderr != "" {
			t.Errorf("completion %s: exit %d, stderr %q", sh, code, stderr)
		}
		goldenCLI(t, "completion."+sh, stdout)
	}
}

// The bash script completes objects, filter keys, devices and formats, and
// never runs rdmatrace: `trace --<TAB>` started a trace through
// urfave/cli's hidden --generate-bash-completion flag, which is gone.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, _, _ := rdmatrace(t, "completion", "bash")
	ib := t.TempDir()
	for _, d := range []string{"rxe0", "siw0"} {
		if err := os.Mkdir(filepath.Join(ib, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for line, want := range map[string]string{
		"rdmatrace tr":                        "trace",
		"rdmatrace trace --filter-pi":         "--filter-pid",
		"rdmatrace res ":                      "show pd cq qp cm_id mr ctx srq rxe0 siw0",
		"rdmatrace res show qp ":              "cgroup comm container dev job link lqpn path-mig-state pdn pid pod rq-psn rqpn sq-psn state type",
		"rdmatrace res cm_id dev ":            "rxe0 siw0",
		"rdmatrace link show ":                "show rxe0 siw0",
		"rdmatrace res -o ":                   "table text json ndjson legacy",
		"rdmatrace trace qp ":                 "cgroup comm container dev event job pid pod res",
		"rdmatrace trace --filter-res c":      "cq cm_id ctx",
		"rdmatrace trace event cm_id_":        "cm_id_create cm_id_attach cm_id_destroy",
		"rdmatrace completion ":               "bash zsh fish",
		"rdmatrace -j re":                     "res",
		"rdmatrace leaks --filter-dev rx":     "rxe0",
		"rdmatrace trace --filter-event cm_s": "cm_send_req cm_send_rep cm_send_rtu cm_send_rej cm_send_mra cm_sent_dreq cm_sent_drep",
	} {
		words := strings.Split(line, " ")
		var q []string
		for _, w := range words {
			q = append(q, strconv.Quote(w))
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(q, " ") + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"; _rdmatrace; echo \"${COMPREPLY[*]}\"\n"
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Env = append(os.Environ(), "RDMATRACE_SYSFS_IB="+ib)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%q<TAB>: %q (%v), want %q", line, out, err, want)
		}
	}
	_, stderr, code := rdmatrace(t, "trace", "--generate-bash-completion")
	if code != 2 || !strings.Contains(stderr, "unknown flag --generate-bash-completion") {
		t.Errorf("trace --generate-bash-completion: exit %d, %q; want the unknown flag, exit 2", code, stderr)
	}
}

// The exit status of each kind of outcome, per command, for what needs no
// kernel: the statuses each --help states.
func TestExitStatusGolden(t *testing.T) {
	in := filepath.Join("..", "..", "testdata", "debugfs", "in")
	var b strings.Builder
	for _, args := range []string{
		"--version", "-V", "help", "help trace", "--help", "res --help",
		"nosuch", "tarce", "help nosuch", "--bogus",
		"res --bogus", "res queue", "res qp colour red", "-j res qp -o xml",
		"dev --bogus", "dev show a b", "link show a b",
		"trace --bogus", "trace qp colour red", "trace -d 5s", "trace --duration x",
		"leaks --bogus", "leaks --interval 0", "leaks --recording x",
		"parse " + filepath.Join(in, "concat.txt"),
		"parse " + filepath.Join(in, "errors.txt"),
		"parse -o ndjson " + filepath.Join(in, "concat.txt"),
		"parse /nonexistent/dump",
		"parse -o xml",
		"completion bash", "completion tcsh", "completion",
	} {
		_, _, code := rdmatrace(t, strings.Fields(args)...)
		fmt.Fprintf(&b, "rdmatrace %s => %d\n", strings.ReplaceAll(args, in+"/", ""), code)
	}
	goldenCLI(t, "exit-status.txt", b.String())
}

// fish and zsh run their scripts as they would at a <TAB>. The harness
// installs both (guest/setup-host.sh); elsewhere each skips, saying so.
func TestFishAndZshCompletionComplete(t *testing.T) {
	dir := t.TempDir()
	for _, sh := range []string{"fish", "zsh"} {
		script, _, _ := rdmatrace(t, "completion", sh)
		if err := os.WriteFile(filepath.Join(dir, sh), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shell := func(t *testing.T, name string) string {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s is not installed (guest/setup-host.sh installs it): its completion is not run", name)
		}
		return path
	}
	t.Run("fish", func(t *testing.T) {
		out, err := exec.Command(shell(t, "fish"), "--no-config", "-c", "source "+filepath.Join(dir, "fish")+
			`; complete -C "rdmatrace res qp state R"; complete -C "rdmatrace trace --filter-e"`).CombinedOutput()
		if got := strings.Fields(string(out)); err != nil || strings.Join(got, " ") != "RESET RTR RTS --filter-event" {
			t.Errorf("fish: %q (%v), want RESET RTR RTS --filter-event", out, err)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		// bashcompinit runs the bash function in sh emulation.
		out, err := exec.Command(shell(t, "zsh"), "-f", "-c", "autoload -U compinit && compinit -u -d "+filepath.Join(dir, "zcompdump")+
			"; source "+filepath.Join(dir, "zsh")+
			`; emulate sh -c 'COMP_WORDS=(rdmatrace res cm_id ps ""); COMP_CWORD=4; _rdmatrace; echo "${COMPREPLY[*]}"'`).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "TCP UDP IB IPoIB" {
			t.Errorf("zsh: %q (%v), want TCP UDP IB IPoIB", out, err)
		}
	})
}
