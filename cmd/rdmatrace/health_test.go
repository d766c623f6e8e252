package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The node-problem-detector example runs `rdmatrace health` with flags it
// has, within the rule's and the plugin's timeouts: NPD kills a plugin
// past its timeout and reads its exit status (0 OK, 1 NonOK, else
// Unknown) and its stdout as the condition's message.
func TestNodeProblemDetectorExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/node-problem-detector/rdma-health.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Plugin       string `json:"plugin"`
		PluginConfig struct {
			Timeout string `json:"timeout"`
		} `json:"pluginConfig"`
		Conditions []struct{ Type string } `json:"conditions"`
		Rules      []struct {
			Type, Condition, Path string
			Args                  []string
			Timeout               string
		} `json:"rules"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Plugin != "custom" || len(cfg.Rules) == 0 || len(cfg.Conditions) == 0 {
		t.Fatalf("not a custom plugin config with a condition and a rule: %+v", cfg)
	}
	flags := map[string]bool{}
	for _, f := range healthCommand().Flags {
		for _, n := range f.Names() {
			flags[n] = true
		}
	}
	for _, r := range cfg.Rules {
		if r.Condition != cfg.Conditions[0].Type || !strings.HasSuffix(r.Path, "/rdmatrace") || len(r.Args) == 0 || r.Args[0] != "health" {
			t.Errorf("rule %+v: want rdmatrace health for condition %s", r, cfg.Conditions[0].Type)
		}
		var since time.Duration
		for i := 1; i < len(r.Args); i++ {
			name := strings.TrimLeft(r.Args[i], "-")
			if !flags[name] {
				t.Errorf("rule's %q is not a flag of health", r.Args[i])
			}
			if name == "since" && i+1 < len(r.Args) {
				since, _ = time.ParseDuration(r.Args[i+1])
				i++
			}
		}
		rule, _ := time.ParseDuration(r.Timeout)
		plugin, _ := time.ParseDuration(cfg.PluginConfig.Timeout)
		// The window, plus loading the tracer (seconds), within both.
		if since+15*time.Second > rule || rule > plugin {
			t.Errorf("--since %v, rule timeout %v, plugin timeout %v: want since+15s <= rule <= plugin", since, rule, plugin)
		}
	}
}

// Bad values are usage errors (exit 2, as "could not tell" is: a plugin
// that is called wrongly tells nothing), each naming the flag.
func TestHealthUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"health", "--since", "-1s"}, "rdmatrace: health: --since -1s: expected a duration from 0 to 1h"},
		{[]string{"health", "--speed", "-5"}, "rdmatrace: health: --speed -5: expected a speed in Gb/s"},
		{[]string{"health", "--headroom", "1"}, "rdmatrace: health: --headroom 1: expected a share from 0 to below 1"},
		{[]string{"health", "--qp-errors", "0"}, "rdmatrace: health: --qp-errors and --failed-creates: expected a count of 1 or more"},
	} {
		_, stderr, code := rdmatrace(t, c.args...)
		if code != 2 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
