package models_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// templateFile is a GGUF file holding an architecture, a chat template and
// a vocabulary of the two special tokens the template reads.
func templateFile(t *testing.T, arch, tmpl, bos, eos string) *gguf.File {
	t.Helper()
	kv := []gguf.KV{{Key: "general.architecture", Value: arch}, {Key: "tokenizer.chat_template", Value: tmpl},
		{Key: "tokenizer.ggml.tokens", Value: []string{bos, eos}},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(0)}, {Key: "tokenizer.ggml.eos_token_id", Value: uint32(1)}}
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

// familyTemplates are the templates the hand-written formats render, with
// their packages' reference cases (renders.json; "" for SmolLM3, whose
// cases are below) and the special tokens of the models' vocabularies.
var familyTemplates = []struct {
	arch, template, cases, only, bos, eos string
}{
	{"qwen3", "qwen3/chat/testdata/Qwen-Qwen3-0.6B.jinja", "qwen3/chat/testdata/renders.json", "", "<|endoftext|>", "<|im_end|>"},
	{"qwen2", "qwen2/chat/testdata/Qwen-Qwen2.5-7B-Instruct.jinja", "qwen2/chat/testdata/renders.json", "", "<|endoftext|>", "<|im_end|>"},
	{"llama", "llamaarch/chat/testdata/meta-llama-Llama-3.2-3B-Instruct.jinja", "llamaarch/chat/testdata/renders.json", "", "<|begin_of_text|>", "<|eot_id|>"},
	{"llama", "llamaarch/chatml/testdata/HuggingFaceTB-SmolLM2-1.7B-Instruct.jinja", "llamaarch/chatml/testdata/renders.json", "", "<|im_start|>", "<|im_end|>"},
	{"gemma3", "gemma3/chat/testdata/google-gemma-3-1b-it.jinja", "gemma3/chat/testdata/renders.json", "", "<bos>", "<eos>"},
	{"granite", "granite/chat/testdata/ibm-granite-granite-3.3-2B-Instruct.jinja", "granite/chat/testdata/renders.json", "3.3", "<|end_of_text|>", "<|end_of_text|>"},
	{"granite", "granite/chat/testdata/ibm-granite-granite-4.0.jinja", "granite/chat/testdata/renders.json", "4.0", "<|end_of_text|>", "<|end_of_text|>"},
	{"granite", "granite/chat/testdata/ibm-granite-granite-4.1.jinja", "granite/chat/testdata/renders.json", "4.1", "<|end_of_text|>", "<|end_of_text|>"},
	{"phi3", "phi3/chat/testdata/microsoft-Phi-4-mini-instruct.jinja", "phi3/chat/testdata/renders.json", "phi4", "<|endoftext|>", "<|endoftext|>"},
	{"phi3", "phi3/chat/testdata/microsoft-Phi-3.5-mini-instruct.jinja", "phi3/chat/testdata/renders.json", "phi35", "<s>", "<|endoftext|>"},
	{"smollm3", "", "", "", "<|im_start|>", "<|im_end|>"},
}

// TestEngineMatchesHandWritten renders each family's own template with the
// Jinja engine and with the family's hand-written format, on the family's
// reference conversations (those that end with a generation prompt, as
// prompts do) and a few more, and wants the same bytes: the hand-written
// formats stay the reference for their templates, and the engine agrees
// with them. Tools on templates that show none (the generic format's
// polyfill: Gemma 3, SmolLM2, Phi-3.5) are left to the hand-written
// formats, whose polyfill is llama.cpp's transcription.
func TestEngineMatchesHandWritten(t *testing.T) {
	extra := []struct {
		msgs []engine.Message
		opts engine.PromptOptions
	}{
		{[]engine.Message{{Role: "user", Content: "Hi"}}, engine.PromptOptions{}},
		{[]engine.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Bye"}}, engine.PromptOptions{}},
		{[]engine.Message{{Role: "user", Content: "Hi"}}, engine.PromptOptions{Thinking: new(bool)}},
	}
	compared := 0
	for _, ft := range familyTemplates {
		name := ft.template
		var src []byte
		var err error
		if ft.template == "" {
			name = "SmolLM3 (../shared/tokenizer/chat_template.jinja)"
			src, err = os.ReadFile(sharedtest.Path(t, "tokenizer/chat_template.jinja"))
		} else {
			src, err = os.ReadFile(ft.template)
		}
		if err != nil {
			t.Fatal(err)
		}
		f := templateFile(t, ft.arch, string(src), ft.bos, ft.eos)
		fam, ok := family.Lookup(ft.arch)
		if !ok {
			t.Fatalf("no family %s", ft.arch)
		}
		hand, err := fam.Format(f)
		if err != nil {
			t.Fatal(err)
		}
		if hf, ok := hand.(*family.Format); ok && hf.Spec().Template != nil {
			t.Errorf("%s: the family did not recognise its own template", name)
		}
		eng, err := family.TemplateFormat(f, string(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		type cas struct {
			name string
			msgs []engine.Message
			opts engine.PromptOptions
		}
		var cases []cas
		for i, e := range extra {
			cases = append(cases, cas{"extra" + string(rune('0'+i)), e.msgs, e.opts})
		}
		if ft.cases != "" {
			data, err := os.ReadFile(ft.cases)
			if err != nil {
				t.Fatal(err)
			}
			var refs []struct {
				Name     string           `json:"name"`
				Messages []engine.Message `json:"messages"`
				Options  struct {
					AddGenerationPrompt bool              `json:"add_generation_prompt"`
					Tools               []json.RawMessage `json:"tools"`
					EnableThinking      *bool             `json:"enable_thinking"`
					Template            string            `json:"template"`
					Documents           json.RawMessage   `json:"documents"`
				} `json:"options"`
				Rendered *string `json:"rendered"`
			}
			if err := json.Unmarshal(data, &refs); err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				if !r.Options.AddGenerationPrompt || r.Rendered == nil || r.Options.Template != ft.only || r.Options.Documents != nil {
					continue
				}
				cases = append(cases, cas{r.Name, r.Messages, engine.PromptOptions{Tools: r.Options.Tools, Thinking: r.Options.EnableThinking}})
			}
		}
		handText := hand.(engine.PromptTexter)
		shown := eng.Spec().Template.ToolsShown
		for _, c := range cases {
			if len(c.opts.Tools) > 0 && !shown || len(c.opts.Tools) == 0 && hasToolTurns(c.msgs) {
				continue // the generic polyfill, llama.cpp's and not the template's
			}
			if !eng.Spec().Template.CallsShown && hasToolTurns(c.msgs) {
				continue // the template drops earlier calls; the hand-written format writes them back, as llama.cpp does
			}
			if ft.bos == "<|begin_of_text|>" {
				// llama.cpp renders Llama 3's tools in the system turn,
				// as the hand-written format does
				c.opts.TemplateKwargs = map[string]json.RawMessage{"tools_in_user_message": json.RawMessage("false")}
			}
			want, err := handText.PromptText(c.msgs, c.opts)
			if err != nil {
				continue // a conversation the template refuses
			}
			got, err := eng.PromptText(c.msgs, c.opts)
			if err != nil {
				t.Errorf("%s %s: the engine: %v", name, c.name, err)
				continue
			}
			if got != want {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Errorf("%s %s: the engine's render differs from the hand-written format's at byte %d:\n got …%q\nwant …%q", name, c.name, i,
					got[max(0, i-60):min(len(got), i+100)], want[max(0, i-60):min(len(want), i+100)])
			}
			compared++
		}
	}
	t.Logf("%d renders compared", compared)
	if compared < 100 {
		t.Errorf("only %d renders compared", compared)
	}
}

// hasToolTurns reports whether msgs hold tool calls or results.
func hasToolTurns(msgs []engine.Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// A file carrying another template than the one its family's format was
// verified on gets its own template through the engine: llama.cpp's copy
// of SmolLM3's (Unsloth's edit, which most uploads ship) and of Llama
// 3.1's; one carrying the verified text keeps the hand-written format.
func TestFileTemplateChoosesFormat(t *testing.T) {
	dir := filepath.Join(sharedtest.LlamaCpp(t), "models", "templates")
	for _, c := range []struct {
		arch, template string
		engine         bool
	}{
		{"smollm3", "HuggingFaceTB-SmolLM3-3B", true},
		{"llama", "meta-llama-Llama-3.1-8B-Instruct", true},
		{"llama", "meta-llama-Llama-3.2-3B-Instruct", false},
		{"qwen3", "Qwen-Qwen3-0.6B", false},
		{"qwen2", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", true},
	} {
		src, err := os.ReadFile(filepath.Join(dir, c.template+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		fam, _ := family.Lookup(c.arch)
		format, err := fam.Format(templateFile(t, c.arch, string(src), "<s>", "</s>"))
		if err != nil {
			t.Fatal(err)
		}
		f, ok := format.(*family.Format)
		if got := ok && f.Spec().Template != nil; got != c.engine {
			t.Errorf("%s file with %s: through the engine %v, want %v", c.arch, c.template, got, c.engine)
		}
	}
}
