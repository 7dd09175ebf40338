package models_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/models/gemma3"
	"github.com/smolgo/smolgo/models/granite"
	"github.com/smolgo/smolgo/models/llamaarch"
	"github.com/smolgo/smolgo/models/phi3"
	"github.com/smolgo/smolgo/models/qwen2"
	"github.com/smolgo/smolgo/models/qwen3"
	"github.com/smolgo/smolgo/tokenizer"
)

// TestPromptIDsMatchLlamaCpp puts each family's chat format in front of a
// real vocabulary of its kind (llama.cpp's models/ggml-vocab-*.gguf) and
// checks the prompt's token ids against llama.cpp's tokenization of the
// rendered text as llama-server makes it (llama_tokenize with special
// tokens parsed and BOS as the vocabulary asks, after common/chat.cpp took
// a BOS the template wrote off the front, so that there is one): template
// markers become their special tokens,
// white space next to them is kept or stripped as llama.cpp does (Phi-3's
// vocabulary strips it after its markers), and the caller's text is
// tokenized by the family's pre-tokenizer. The templates themselves are
// checked byte for byte against jinja2 in the chat packages.
func TestPromptIDsMatchLlamaCpp(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	vocabs := filepath.Join(sharedtest.LlamaCpp(t), "models")
	weather := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	conversations := []struct {
		name  string
		msgs  []engine.Message
		tools []json.RawMessage
	}{
		{"multi-turn", []engine.Message{
			{Role: "system", Content: "Be brief, and answer in English."},
			{Role: "user", Content: "Hello there! How are   you doing today?\n\nI'm fine."},
			{Role: "assistant", Content: "Fine, thanks: 42 ways."},
			{Role: "user", Content: " And now, über-café 日本語?"},
		}, nil},
		{"tools", []engine.Message{{Role: "user", Content: "What's the weather in Paris?"}}, []json.RawMessage{weather}},
	}
	for _, c := range []struct {
		vocab, format string
		spec          family.FormatSpec
	}{
		{"qwen2", "qwen2", qwen2.FormatSpec},
		{"qwen2", "qwen3", qwen3.FormatSpec},
		{"llama-bpe", "llama3", llamaarch.FormatSpec},
		{"starcoder", "smollm2", llamaarch.ChatMLSpec("You are a helpful AI assistant named SmolLM, trained by Hugging Face")},
		{"gemma-4", "gemma3", gemma3.FormatSpec},
		{"refact", "granite3.3", granite.FormatSpec},
		{"refact", "granite4.1", granite.FormatSpec41},
		{"phi-3", "phi4-mini", phi3.FormatSpec},
		{"phi-3", "phi3.5", phi3.Phi35FormatSpec},
	} {
		path := filepath.Join(vocabs, "ggml-vocab-"+c.vocab+".gguf")
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		format := family.NewFormat(f, c.spec)
		for _, conv := range conversations {
			t.Run(c.format+"/"+c.vocab+"/"+conv.name, func(t *testing.T) {
				ours, err := format.Prompt(conv.msgs, engine.PromptOptions{Tools: conv.tools})
				if err != nil {
					t.Fatal(err)
				}
				text, _, err := c.spec.Render(f, conv.msgs, engine.PromptOptions{Tools: conv.tools})
				if err != nil {
					t.Fatal(err)
				}
				tok, err := tokenizer.FromGGUF(f)
				if err != nil {
					t.Fatal(err)
				}
				if tok.AddBOS() {
					if bos, ok := tok.BOS(); ok {
						text = strings.TrimPrefix(text, tok.Token(bos))
					}
				}
				out, err := exec.Command(bin, "tokenize", "--model", path, "--text", text, "--special", "--add-special").Output()
				if err != nil {
					t.Fatalf("llamaref tokenize: %v", err)
				}
				var ref struct {
					Tokens []int32 `json:"tokens"`
				}
				if err := json.Unmarshal(out, &ref); err != nil {
					t.Fatalf("llamaref tokenize output: %v", err)
				}
				if !slices.Equal(ours, ref.Tokens) {
					t.Errorf("prompt of %q:\nours      %v\nllama.cpp %v", text, ours, ref.Tokens)
				}
			})
		}
		f.Close()
	}
}
