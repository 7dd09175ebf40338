package lfm2

import (
	"context"
	_ "embed"
	"log/slog"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/lfm2/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// DefaultTemplate is LFM2.5-Instruct's chat template (llama.cpp's copy,
// models/templates/LFM2.5-Instruct.jinja), the format of a file that
// carries none.
//
//go:embed LFM2.5-Instruct.jinja
var DefaultTemplate string

// TemplateOptions are llama.cpp's adjustments for LFM2's templates
// (common/parsers/lfm2.cpp): an answer's reasoning_content is also its
// thinking field, which LFM2.5-8B-A1B's template reads.
var TemplateOptions = family.TemplateOptions{ReasoningField: "thinking"}

// Format is LFM2's chat format: the file's own chat template (LFM2.5's,
// LFM2-8B-A1B's, LFM2.5-8B-A1B's, or any other) rendered by package
// family's Jinja engine, or DefaultTemplate for a file without one. The
// engine reads the markers out of the template: <|im_end|> ending a turn,
// <think>…</think> reasoning where the template shows it, and, for LFM2's
// templates (which list the tools in the system turn, "List of tools:
// […]"), the Python-style calls of Tools. The templates keep only an
// earlier answer's content, not its calls, as they do under llama.cpp.
func Format(f *gguf.File) (engine.Format, error) {
	src, _ := f.String("tokenizer.chat_template")
	if src != "" {
		spec, err := family.TemplateSpecWith(f, src, TemplateOptions)
		if err == nil {
			return family.NewFormat(f, spec), nil
		}
		slog.Warn("lfm2: the file's chat template does not parse; using LFM2.5-Instruct's", "err", err)
	}
	spec, err := family.TemplateSpecWith(f, DefaultTemplate, TemplateOptions)
	if err != nil {
		return nil, err
	}
	return family.NewFormat(f, spec), nil
}

// Tools is LFM2's tool-call syntax, family's "lfm2": chat.ToolParser
// (with the ids of the markers in the model's vocabulary) and
// chat.CallGrammar to force calls. Its markers are special tokens, which
// the format's parser gives their text back (family.SpecialMarkers).
var Tools family.ToolSyntax = tools{}

type tools struct{}

func (tools) NewParser(tok *tokenizer.Tokenizer) family.ToolParser {
	start, end := int32(-1), int32(-1)
	if tok != nil {
		if id, ok := tok.ID(chat.CallStart); ok {
			start = id
		}
		if id, ok := tok.ID(chat.CallEnd); ok {
			end = id
		}
	}
	return chat.NewToolParser(start, end)
}

func (tools) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return chat.CallGrammar(ctx, funcs, opts)
}

func (tools) MarkerTexts() []string { return []string{chat.CallStart, chat.CallEnd} }
