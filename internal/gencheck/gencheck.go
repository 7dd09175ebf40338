// Package gencheck holds generated files to their generators. A package
// whose assembly a program writes lists its generators in go:generate lines
// of one file (generate.go), and its test calls UpToDate, which runs each of
// them in an empty directory and fails when a file it writes differs from
// the committed one: an edit of a generator without `go generate`, or of a
// generated file by hand, fails `go test ./...`.
package gencheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// UpToDate runs every `//go:generate go run gen_NAME.go` line of file (in
// the test's package directory) in a temporary directory and compares the
// files it writes with the package's. It also fails when a gen_*.go of the
// directory has no such line, so that a new generator is run by `go
// generate ./...` and checked here. It skips in -short mode and where the
// go command is absent (fails under CI=true).
func UpToDate(t *testing.T, file string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the generators with the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the go command is missing under CI: %v", err)
		}
		t.Skipf("no go command to run the generators: %v", err)
	}
	gens, err := generators(file)
	if err != nil {
		t.Fatal(err)
	}
	all, err := filepath.Glob("gen_*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all {
		if !slices.Contains(gens, g) {
			t.Errorf("%s has no `//go:generate go run %s` line in %s: go generate does not run it", g, g, file)
		}
	}
	for _, g := range gens {
		t.Run(g, func(t *testing.T) {
			src, err := filepath.Abs(g)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cmd := exec.Command(goCmd, "run", src)
			cmd.Dir = dir // the generators write into their working directory
			cmd.Env = append(os.Environ(), "GOFLAGS=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go run %s: %v\n%s", g, err, out)
			}
			written, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(written) == 0 {
				t.Fatalf("go run %s wrote no file", g)
			}
			for _, e := range written {
				got, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(e.Name())
				if err != nil {
					t.Errorf("%s writes %s, which is not committed: %v", g, e.Name(), err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s is stale: %s writes something else (%s); run `go generate ./%s` and commit the result",
						e.Name(), g, firstDiff(got, want), pkgDir())
				}
			}
		})
	}
}

// generators returns the gen_*.go files that file's go:generate lines run.
func generators(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var gens []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		args, ok := strings.CutPrefix(sc.Text(), "//go:generate ")
		if !ok {
			continue
		}
		fields := strings.Fields(args)
		if len(fields) != 3 || fields[0] != "go" || fields[1] != "run" || !strings.HasPrefix(fields[2], "gen_") {
			return nil, fmt.Errorf("%s: %q is not `//go:generate go run gen_NAME.go`", file, sc.Text())
		}
		gens = append(gens, fields[2])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(gens) == 0 {
		return nil, fmt.Errorf("%s has no go:generate lines", file)
	}
	return gens, nil
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d: generated %q, committed %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("generated %d lines, committed %d", len(g), len(w))
}

// pkgDir is the test's package directory as a path from the module root
// (where go.mod is), for the message.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "..."
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if rel, err := filepath.Rel(d, wd); err == nil {
				return filepath.ToSlash(rel)
			}
			return "..."
		}
		if filepath.Dir(d) == d {
			return "..."
		}
	}
}
