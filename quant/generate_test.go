package quant

import (
	"testing"

	"github.com/smolgo/smolgo/internal/gencheck"
)

// TestGeneratedUpToDate runs generate.go's generators and compares what
// they write with the committed assembly.
func TestGeneratedUpToDate(t *testing.T) { gencheck.UpToDate(t, "generate.go") }
