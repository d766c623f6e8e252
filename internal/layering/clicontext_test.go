package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const cliPath = "github.com/urfave/cli/v2"

// A command's entry (runX, a cli.Command's Action) has its flags read by
// xOptions (or checkXFlags) and hands plain values down, as ptcpdump's
// capture(ctx, stop, opts) and bpf2go's gen.Compile take none: no helper
// below takes *cli.Context.
func TestCLIContextStopsAtTheCommandsEdge(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "cmd", "*"))
	if len(dirs) == 0 {
		t.Fatal("no command under cmd/")
	}
	for _, dir := range dirs {
		pkg := "cmd/" + filepath.Base(dir)
		got, err := contextHelpers(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			t.Errorf("%s: %s takes *cli.Context below a command's entry: give it the values it needs (read in xOptions)", pkg, h)
		}
	}
}

// The rule catches what it is for: a planted helper that takes the
// context from its command, beside an entry and its Options that may.
func TestCLIContextRuleFindsAPlantedHelper(t *testing.T) {
	dir := t.TempDir()
	src := `package main

import cli "` + cliPath + `"

var cmd = &cli.Command{Name: "x", Action: runX}

func runX(c *cli.Context) error {
	o, err := xOptions(c)
	if err != nil {
		return err
	}
	return helper(c, o)
}

func xOptions(c *cli.Context) (string, error) { return c.String("o"), nil }

func checkXFlags(c *cli.Context) error { return nil }

func helper(c *cli.Context, o string) error { return nil }

var _ = &cli.Command{Action: func(c *cli.Context) error { return checkXFlags(c) }}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := contextHelpers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"x.go:helper"}; !slices.Equal(got, want) {
		t.Errorf("contextHelpers = %q, want %q", got, want)
	}
}

// contextHelpers lists, as "file.go:func", the functions of the package in
// dir (its non-test files) that take a *cli.Context and are called by
// another function: not an entry (a function only handed to urfave/cli as
// a value) nor a reader of flags (named xOptions or checkXFlags).
func contextHelpers(dir string) ([]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	takes := map[string]string{} // func -> file
	called := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		cli := cliName(f)
		if cli == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil && takesContext(n.Type, cli) {
					takes[n.Name.Name] = filepath.Base(path)
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok {
					called[id.Name] = true
				}
			}
			return true
		})
	}
	var out []string
	for name, file := range takes {
		if !called[name] || strings.HasSuffix(name, "Options") || strings.HasSuffix(name, "Flags") {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%s", file, name))
	}
	slices.Sort(out)
	return out, nil
}

// cliName is the name f imports urfave/cli under, "" when it does not.
func cliName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == cliPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "cli"
		}
	}
	return ""
}

// takesContext says whether a function has a *cli.Context parameter.
func takesContext(ft *ast.FuncType, cli string) bool {
	for _, p := range ft.Params.List {
		star, ok := p.Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == cli {
				return true
			}
		}
	}
	return false
}
