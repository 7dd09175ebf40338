package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// The committed PTX must come from the committed CUDA C: kernels/build.sh
// records the sources' SHA-256 in sources.sum when it writes the PTX.
func TestPTXUpToDate(t *testing.T) {
	want, err := os.ReadFile("sources.sum")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("kernels/*.cu")
	headers, _ := filepath.Glob("kernels/*.cuh")
	sort.Strings(files)
	sort.Strings(headers)
	var got bytes.Buffer
	for _, f := range append(files, headers...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&got, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(f))
	}
	if got.String() != string(want) {
		t.Errorf("kernels/ changed since the PTX was made: run go generate ./cuda\nsources now:\n%s\nsources.sum:\n%s", got.String(), want)
	}
}
