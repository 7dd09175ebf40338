package tensor

import (
	"testing"

	"github.com/smolgo/smolgo/internal/gencheck"
)

// TestGeneratedUpToDate runs generate.go's generator and compares what it
// writes with the committed assembly.
func TestGeneratedUpToDate(t *testing.T) { gencheck.UpToDate(t, "generate.go") }
