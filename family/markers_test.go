package family

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/jinja"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// wantMarkers is what DetectMarkers must find in llama.cpp's templates
// that have tool calls or reasoning: the tool-call syntax ("" for none
// shown: the generic JSON format), the reasoning tags ("" for none) and
// whether the generation prompt opens the reasoning block (with
// enable_thinking unset).
var wantMarkers = map[string]struct {
	syntax, open, close string
	started             bool
}{
	"Qwen-Qwen3-0.6B":          {"Hermes", "<think>", "</think>", false},
	"Qwen-Qwen2.5-7B-Instruct": {"Hermes", "", "", false},
	"Qwen-QwQ-32B":             {"Hermes", "<think>", "</think>", false},
	"Qwen3-Coder":              {"Qwen3-Coder XML", "", "", false},
	"NousResearch-Hermes-3-Llama-3.1-8B-tool_use":   {"Hermes", "", "", false},
	"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {"Hermes", "", "", false},
	"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B":      {"DeepSeek", "<think>", "</think>", false},
	"deepseek-ai-DeepSeek-R1-Distill-Llama-8B":      {"DeepSeek", "<think>", "</think>", true},
	"meta-llama-Llama-3.1-8B-Instruct":              {"Llama 3 JSON", "", "", false},
	"meta-llama-Llama-3.2-3B-Instruct":              {"Llama 3 JSON", "", "", false},
	"meta-llama-Llama-3.3-70B-Instruct":             {"Llama 3 JSON", "", "", false},
	"openai-gpt-oss-120b":                           {"harmony", "", "", false},
	"moonshotai-Kimi-K2":                            {"Kimi K2", "", "", false},
	"GLM-4.6":                                       {"GLM", "<think>", "</think>", false},
	"meetkai-functionary-medium-v3.2":               {"functionary v3.2", "", "", false},
	"meetkai-functionary-medium-v3.1":               {"functionary v3.1", "", "", false},
	"CohereForAI-c4ai-command-r7b-12-2024-tool_use": {"Command-R", "<|START_THINKING|>", "<|END_THINKING|>", false},
	"ibm-granite-granite-3.3-2B-Instruct":           {"Granite", "<think>", "</think>", false},
	"ibm-granite-granite-4.0":                       {"Hermes", "", "", false},
	"microsoft-Phi-3.5-mini-instruct":               {"", "", "", false},
	"unsloth-mistral-Devstral-Small-2507":           {"Mistral", "", "", false},
	"mistralai-Mistral-Nemo-Instruct-2407":          {"Mistral", "", "", false},
	"LFM2.5-8B-A1B":                                 {"LFM2 Python calls", "<think>", "</think>", false},
	"LFM2-8B-A1B":                                   {"LFM2 Python calls", "", "", false},
	"LFM2.5-Instruct":                               {"LFM2 Python calls", "", "", false},
	"HuggingFaceTB-SmolLM3-3B":                      {"", "<think>", "</think>", false},
}

// TestMarkersCorpus reads the markers of every template in llama.cpp's
// models/templates and checks those listed in wantMarkers.
func TestMarkersCorpus(t *testing.T) {
	dir := filepath.Join(sharedtest.LlamaCpp(t), "models", "templates")
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(files) < 60 {
		t.Fatalf("%d templates in %s (%v)", len(files), dir, err)
	}
	sort.Strings(files)
	seen := 0
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".jinja")
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := jinja.Parse(string(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		m := DetectMarkers(&templateText{t: tmpl, src: string(src), special: map[string]string{"bos_token": "<s>", "eos_token": "</s>"},
			now: func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) }})
		syntax := ""
		if m.Syntax != nil {
			syntax = m.Syntax.Name
		}
		t.Logf("%-50s eot=%q reasoning=%q %q started=%v tools=%q shown=%v", name, m.EndOfTurn, m.ReasoningOpen, m.ReasoningClose, m.StartsInReasoning, syntax, m.ToolsShown)
		want, ok := wantMarkers[name]
		if !ok {
			continue
		}
		seen++
		if syntax != want.syntax || m.ReasoningOpen != want.open || m.ReasoningClose != want.close || m.StartsInReasoning[0] != want.started {
			t.Errorf("%s: syntax %q, reasoning %q %q, started %v; want %q, %q %q, %v", name, syntax, m.ReasoningOpen, m.ReasoningClose,
				m.StartsInReasoning[0], want.syntax, want.open, want.close, want.started)
		}
	}
	if seen != len(wantMarkers) {
		t.Errorf("found %d of the %d templates listed", seen, len(wantMarkers))
	}
}
