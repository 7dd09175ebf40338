package smolgo_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// layers is the package layering the package doc describes, lowest first:
// a package may import packages of its own layer's lower neighbours and
// below, never of a later layer. A pattern ending in /... covers a folder's
// packages; the first matching pattern, in this order, places a package.
var layers = [][]string{
	{"internal/cpu", "internal/bigmem", "internal/chatfmt/think", "internal/jinja", "gguf", "rope", "backend", "sample", "toolcall"},
	{"quant", "tokenizer/...", "tokenizer", "internal/embedtok", "vision/pixels"},
	{"tensor", "grammar"},
	{"llama", "engine"},
	{"cuda", "family", "internal/chatfmt", "engine/enginetest", "vision"},
	{"models/*/chat", "models/*/chatml", "smollm3/chat"},
	{"models/bert", "models/*", "smollm3"},
	{"models"},
	{"server", "server/...", "internal/...", "examples/..."},
}

// layerOf returns the layer of a package path relative to the module, or
// -1 for the root package and packages outside the module.
func layerOf(rel string) int {
	for i, ps := range layers {
		for _, p := range ps {
			if ok, _ := path.Match(p, rel); ok || rel == p {
				return i
			}
			if dir, found := strings.CutSuffix(p, "/..."); found && strings.HasPrefix(rel, dir+"/") {
				return i
			}
		}
	}
	return -1
}

// TestLayers holds the layering: it lists every package's imports with the
// go command and fails on an import from a lower layer to a higher one, and
// on a package the table above does not place.
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	const mod = "github.com/smolgo/smolgo"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], mod+"/")
		if !ok {
			continue // the root package
		}
		lp := layerOf(pkg)
		if lp < 0 {
			t.Errorf("package %s is in no layer of the table in layers_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, mod+"/")
			if !ok {
				continue
			}
			if ld := layerOf(dep); ld > lp {
				t.Errorf("%s (layer %d) imports %s (layer %d): an arrow back up", pkg, lp, dep, ld)
			}
		}
	}
}
