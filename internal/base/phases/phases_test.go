package phases

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The tests below are named so that file and alphabetical order would run
// them the other way round: Run must put TestZFirst first and TestALast
// last.
var ran []string

func TestALast(t *testing.T)   { ran = append(ran, "TestALast") }
func TestMiddle(t *testing.T)  { ran = append(ran, "TestMiddle") }
func TestZFirst(t *testing.T)  { ran = append(ran, "TestZFirst") }
func TestHelpers(t *testing.T) { ran = append(ran, "TestHelpers") }

func TestMain(m *testing.M) {
	flag.Parse()
	userRun := flag.Lookup("test.run").Value.String()
	code := Run(m, []func(*testing.T){TestZFirst}, []func(*testing.T){TestALast})
	if userRun == "" {
		if want := []string{"TestZFirst", "TestMiddle", "TestHelpers", "TestALast"}; !slices.Equal(ran, want) {
			fmt.Fprintf(os.Stderr, "phases ran %v, want %v\n", ran, want)
			code = 1
		}
	} else if strings.Contains(userRun, "Middle") && slices.Contains(ran, "TestALast") {
		fmt.Fprintf(os.Stderr, "-test.run %s ran %v: a last test it does not select\n", userRun, ran)
		code = 1
	}
	os.Exit(code)
}

func TestSelectedFollowsRunAndSkip(t *testing.T) {
	tests := []string{"TestNoDevices", "TestLeaksNamesWhatAKernelModuleLeft"}
	for _, c := range []struct {
		run, skip string
		want      []string
	}{
		{"", "", tests},
		{".", "", tests},
		{"TestLeaks", "", tests[1:]},
		{"TestLeaks/sub", "", tests[1:]},
		{"TestRes", "", nil},
		{".", "Kernel", tests[:1]},
	} {
		if got := selected(tests, c.run, c.skip); !slices.Equal(got, c.want) {
			t.Errorf("run %q skip %q: %v, want %v", c.run, c.skip, got, c.want)
		}
	}
	if got := exactly([]string{"TestA", "TestB.x"}); got != `^(TestA|TestB\.x)$` {
		t.Errorf("exactly: %s", got)
	}
	if got := names([]func(*testing.T){TestZFirst}); !slices.Equal(got, []string{"TestZFirst"}) {
		t.Errorf("names: %v", got)
	}
}
