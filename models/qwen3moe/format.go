package qwen3moe

import (
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/models/qwen3"
)

// Format is Qwen3's chat format (ChatML, <think>, Hermes tool calls).
func Format(f *gguf.File) (engine.Format, error) { return family.NewFormat(f, qwen3.FormatSpec), nil }
