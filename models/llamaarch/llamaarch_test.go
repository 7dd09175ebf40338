package llamaarch

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/models/llamaarch/chatml"
)

// fileWithTemplate is a GGUF file holding only an architecture, the
// tokens, and, unless tmpl is "", a chat template.
func fileWithTemplate(t *testing.T, tmpl string, tokens ...string) *gguf.File {
	t.Helper()
	kv := []gguf.KV{{Key: "general.architecture", Value: Arch}}
	if tmpl != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: tmpl})
	}
	if tokens != nil {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.tokens", Value: tokens})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The format follows from the file's chat template: what its render starts
// with, and which token ends a turn, tell which one was chosen: Llama
// 3.2's and SmolLM2's hand-written formats for their templates, the
// file's own template through the Jinja engine for any other.
func TestFormatByTemplate(t *testing.T) {
	b, err := os.ReadFile("chatml/testdata/HuggingFaceTB-SmolLM2-1.7B-Instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	smol := string(b)
	spm := []string{"<unk>", "<s>", "</s>", "<0x0A>", "▁Once"} // llama2.c's converter, Llama 2
	llama3 := []string{"a", "b", "<|begin_of_text|>", "<|end_of_text|>"}
	tests := []struct {
		name, tmpl string
		tokens     []string
		start      string // the render's start; "" for a render that fails
		endOfTurn  []string
	}{
		// llama-server's ChatML, byte for byte (common/chat.cpp's CHATML_TEMPLATE_SRC)
		{"no template", "", spm, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", []string{"<|im_end|>"}},
		{"no template, no vocabulary", "", nil, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", []string{"<|im_end|>"}},
		{"no template, Llama 3's vocabulary", "", llama3, "<|begin_of_text|><|start_header_id|>system", []string{"<|eot_id|>", "<|eom_id|>"}},
		// Any other template renders through the Jinja engine, its end of
		// turn read from it (the file has no vocabulary: bos_token is "").
		{"Llama 3-like", "{{ bos_token }}{% for m in messages %}<|start_header_id|>{% endfor %}", nil, "<|start_header_id|>", nil},
		{"SmolLM2", smol, nil, "<|im_start|>system\n" + chatml.DefaultSystem + "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", []string{"<|im_end|>"}},
		{"SmolLM2 fine-tune", strings.Replace(smol, chatml.DefaultSystem, "You are Pip.", 1), nil, "<|im_start|>system\nYou are Pip.<|im_end|>\n", []string{"<|im_end|>"}},
		{"plain ChatML", "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}", nil,
			"<|im_start|>user\nHi<|im_end|>\n", []string{"<|im_end|>"}},
		{"Gemma", "{{ bos_token }}<start_of_turn>", nil, "<start_of_turn>", nil},
		{"does not parse", "{% if %}", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fileWithTemplate(t, tt.tmpl, tt.tokens...)
			format, err := Format(f)
			if err != nil {
				t.Fatal(err)
			}
			spec := format.(*family.Format).Spec()
			text, _, err := spec.Render(f, []engine.Message{{Role: "user", Content: "Hi"}}, engine.PromptOptions{})
			if tt.start == "" {
				if err == nil || !strings.Contains(err.Error(), "the Jinja engine cannot parse it") {
					t.Errorf("render %q, err %v; want an error naming the template", text, err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(text, tt.start) {
				t.Errorf("render %q, %v; want it to start with %q", text, err, tt.start)
			}
			if !slices.Equal(spec.EndOfTurn, tt.endOfTurn) || spec.Tools == nil {
				t.Errorf("end of turn %q, tools %v; want %q and tools", spec.EndOfTurn, spec.Tools, tt.endOfTurn)
			}
		})
	}
}
