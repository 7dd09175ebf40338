package chatml

import (
	"cmp"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// DefaultSystem is the system text SmolLM2's template writes when the
// conversation has none.
const DefaultSystem = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

// Options are the template's inputs besides the messages.
type Options struct {
	// DefaultSystem is the system text written when the conversation does
	// not open with a system message: the one in the file's template (see
	// Recognize). "" means SmolLM2's, the package's DefaultSystem.
	DefaultSystem string
	// NoSystem writes no system turn of the template's own: the render is
	// then llama.cpp's built-in ChatML template (common/chat.cpp's
	// CHATML_TEMPLATE_SRC), which llama-server uses for a file without a
	// chat template. DefaultSystem is ignored.
	NoSystem bool
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}).
	// The template has no place for them: they are described in the
	// system text the way llama.cpp's generic tool format does (see the
	// package documentation), and the model is asked to answer in JSON.
	Tools []json.RawMessage
	// AddGenerationPrompt ends the render with the assistant's header,
	// ready for generation.
	AddGenerationPrompt bool
}

// The template's markers.
const (
	ImStart = "<|im_start|>"
	ImEnd   = "<|im_end|>"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with SmolLM2's chat template, byte for
// byte as Hugging Face transformers renders the published template (see
// the package documentation for its rules); tool use is rewritten first as
// llama.cpp did. The text is meant to be tokenized with special tokens
// parsed; RenderSpans also says which bytes came from the caller, to
// tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, and the JSON that carries tool calls and results.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if len(msgs) == 0 {
		return "", nil, ErrNoMessages
	}
	// EOS <|im_end|>: minja's example call ends with the JSON.
	turns, err := chatfmt.GenericTurns(msgs, opts.Tools, "")
	if err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	if turns[0].Role != "system" && !opts.NoSystem {
		b.WriteString(ImStart + "system\n" + cmp.Or(opts.DefaultSystem, DefaultSystem) + ImEnd + "\n")
	}
	for _, t := range turns {
		b.WriteString(ImStart + t.Role + "\n")
		b.WritePieces(t.Pieces)
		b.WriteString(ImEnd + "\n")
	}
	if opts.AddGenerationPrompt {
		b.WriteString(ImStart + "assistant\n")
	}
	return b.String(), b.Spans(), nil
}

// nl is a line break in one of the template's string literals: the
// character itself (what tokenizer_config.json's "\n" decodes to, and so
// what GGUF files hold) or Jinja's escape for it.
const nl = `(?:\n|\\n)`

// templateRE is SmolLM2's template with its default system text captured:
// any text without quotes or backslashes but for \n escapes.
var templateRE = regexp.MustCompile(`^` + regexp.QuoteMeta(`{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system`) +
	nl + `((?:[^'\\]|\\n)*)` + regexp.QuoteMeta(`<|im_end|>`) + nl +
	regexp.QuoteMeta(`' }}{% endif %}{{'<|im_start|>' + message['role'] + '`) + nl +
	regexp.QuoteMeta(`' + message['content'] + '<|im_end|>' + '`) + nl +
	regexp.QuoteMeta(`'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant`) + nl +
	regexp.QuoteMeta(`' }}{% endif %}`) + `$`)

// Recognize reports whether src, a file's tokenizer.chat_template, is
// SmolLM2-Instruct's template, or the same template with another default
// system text (as fine-tunes ship it), and returns that text for
// Options.DefaultSystem. White space around the template is ignored, and a
// line break inside its strings may be the character or the \n escape; any
// other difference (another loop, a tool section, an escape in the default
// text other than \n, an empty default) makes it a template this package
// does not render.
func Recognize(src string) (defaultSystem string, ok bool) {
	m := templateRE.FindStringSubmatch(strings.TrimSpace(src))
	if m == nil || m[1] == "" {
		return "", false
	}
	return strings.ReplaceAll(m[1], `\n`, "\n"), true
}
