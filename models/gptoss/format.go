package gptoss

import (
	"errors"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
)

// Format is gpt-oss's chat format. Until the harmony renderer lands, its
// prompts fail with an error saying so (the model still runs Forward).
func Format(f *gguf.File) (engine.Format, error) {
	return family.NewFormat(f, family.FormatSpec{
		Render: func(*gguf.File, []engine.Message, engine.PromptOptions) (string, [][2]int, error) {
			return "", nil, errors.New("gptoss: the harmony chat format is not implemented yet")
		},
	}), nil
}
