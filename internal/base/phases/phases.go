// Package phases runs a test binary's tests in an explicit order of phases
// rather than in the order of their files' names: the tests that must run
// first, then the rest, then those that must run last. -test.run and
// -test.skip still select tests, as they do for go test.
package phases

import (
	"flag"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// Run is for TestMain, after flag.Parse: it runs the tests of first, then
// every other test (in go test's order), then the tests of last, and
// returns the exit code for os.Exit. Tests are given as functions, not
// names, so that renaming one cannot silently move it out of its phase.
func Run(m *testing.M, first, last []func(*testing.T)) int {
	runFlag, skipFlag := flag.Lookup("test.run"), flag.Lookup("test.skip")
	userRun, userSkip := runFlag.Value.String(), skipFlag.Value.String()
	firstNames, lastNames := names(first), names(last)
	code := 0
	phase := func(run, skip string) {
		runFlag.Value.Set(run)
		skipFlag.Value.Set(skip)
		if c := m.Run(); c != 0 {
			code = c
		}
	}
	if sel := selected(firstNames, userRun, userSkip); len(sel) > 0 {
		phase(exactly(sel), "")
	}
	skip := exactly(append(firstNames, lastNames...))
	if userSkip != "" {
		skip = userSkip + "|" + skip
	}
	// When -test.run names only first or last tests, this phase runs none
	// and go test says "no tests to run": harmless.
	phase(userRun, skip)
	if sel := selected(lastNames, userRun, userSkip); len(sel) > 0 {
		phase(exactly(sel), "")
	}
	return code
}

func names(fs []func(*testing.T)) []string {
	var out []string
	for _, f := range fs {
		full := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
		out = append(out, full[strings.LastIndexByte(full, '.')+1:])
	}
	return out
}

// selected keeps the names -test.run and -test.skip select at the top
// level (the part of a pattern before its first '/').
func selected(names []string, run, skip string) []string {
	var out []string
	for _, n := range names {
		if (run == "" || matches(run, n)) && (skip == "" || !matches(skip, n)) {
			out = append(out, n)
		}
	}
	return out
}

func matches(pattern, name string) bool {
	top, _, _ := strings.Cut(pattern, "/")
	ok, err := regexp.MatchString(top, name)
	return err == nil && ok
}

func exactly(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}
