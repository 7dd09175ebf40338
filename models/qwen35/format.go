package qwen35

import (
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/models/qwen3"
)

// Format is Qwen3.5's chat format.
func Format(f *gguf.File) (engine.Format, error) { return family.NewFormat(f, qwen3.FormatSpec), nil }
