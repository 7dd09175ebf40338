package synth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// These tests run llama.cpp itself through the project's llamaref tool
// (../shared/tools/llamaref/build.sh builds it; sharedtest.Llamaref finds
// it, and CI has it). On the tiny presets they are part of go test ./...;
// the real shapes (shrunk to two blocks, still minutes in all) join with
// SMOLGO_HEAVY=1:
//
//	SMOLGO_HEAVY=1 go test -run Llamaref -v ./internal/synth/

func llamaref(t *testing.T) string {
	t.Helper()
	return sharedtest.Llamaref(t)
}

// heavyPreset reports whether a preset is a real shape, which the llamaref
// tests write only with SMOLGO_HEAVY=1.
func heavyPreset(m synth.Model) bool { return m.Shape.Vocab != 0 || m.Shape.Layers > 8 }

// skipHeavy skips a real-shape preset unless SMOLGO_HEAVY=1.
func skipHeavy(t *testing.T, m synth.Model) {
	t.Helper()
	if heavyPreset(m) && os.Getenv("SMOLGO_HEAVY") != "1" {
		t.Skip("a real shape: set SMOLGO_HEAVY=1")
	}
}

func runLlamaref(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llamaref %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// small shrinks a preset to at most two blocks and a vocabulary of at most
// 64 MB of F32 embeddings, keeping everything else (widths, heads, head
// size, family keys), so a real shape can be written and run in a moment.
// Llama 3's computed rope factors become llamaref's random ones.
func small(m synth.Model) synth.Model {
	m.Shape.Layers = min(m.Shape.Layers, 2)
	if m.Shape.Vocab*m.Shape.Embd*4 > 64<<20 {
		m.Shape.Vocab = 0
	}
	if m.Shape.RopeFreqs == "llama3" {
		m.Shape.RopeFreqs = "random"
	}
	return m
}

func writeFile(t *testing.T, m synth.Model, mix synth.Mix, path string) {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: mix}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLlamarefSynthAgrees writes every preset (shrunk by small) here and
// with llamaref synth and the same flags, and compares the files byte for
// byte: beyond the golden models, this covers the real shapes' head sizes
// (the Q/K norm level depends on it), widths, GQA ratios, BF16 rounding,
// padded vocabularies, Gemma's window keys and bge-small's CLS pooling.
func TestLlamarefSynthAgrees(t *testing.T) {
	bin := llamaref(t)
	dir := t.TempDir()
	for _, name := range synth.PresetNames() {
		t.Run(name, func(t *testing.T) {
			m, _ := synth.Preset(name)
			skipHeavy(t, m)
			m = small(m)
			// llamaref has no pre-tokenizer flag (SmolLM2's "smollm" is
			// no part of the weights) and reads a chat template from a
			// file.
			m.Pre = ""
			bare, extra := m, []string(nil)
			if m.ChatTemplate != "" {
				path := filepath.Join(dir, name+".jinja")
				if err := os.WriteFile(path, []byte(m.ChatTemplate), 0o644); err != nil {
					t.Fatal(err)
				}
				bare.ChatTemplate, extra = "", []string{"--chat-template", path}
			}
			args, err := llamarefArgs(bare)
			if errors.Is(err, errNoArch) {
				t.Skipf("%s: %v", m.Shape.Arch, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, extra...)
			theirs := filepath.Join(dir, name+"-llamaref.gguf")
			runLlamaref(t, bin, append([]string{"synth", "--out", theirs}, args...)...)
			want, err := os.ReadFile(theirs)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := synth.Write(context.Background(), &buf, m, synth.Options{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				describeDiff(t, buf.Bytes(), want)
			}
		})
	}
}

// TestLlamarefLoads has llama.cpp load and run what synth writes: every
// preset (shrunk by small) in F32, F16, BF16, Q8_0 and Q4_K_M (and the
// mixture-of-experts ones in MXFP4, llama.cpp's MXFP4_MOE), three tokens through
// llama_decode (decoders, plus one greedy step) or llama_encode with the
// model's pooling (BERT), and every output finite. Each quantized file must
// also be byte for byte what llama_model_quantize makes of the F32 one:
// this checks the type mix on the real widths (Qwen2.5-0.5B's 896 columns
// fall back from q4_K/q6_K to q5_0/q8_0) and on BERT's tensors.
func TestLlamarefLoads(t *testing.T) {
	bin := llamaref(t)
	dir := t.TempDir()
	for _, name := range synth.PresetNames() {
		m, _ := synth.Preset(name)
		if heavyPreset(m) && os.Getenv("SMOLGO_HEAVY") != "1" {
			continue // a real shape: SMOLGO_HEAVY=1
		}
		m = small(m)
		f32 := filepath.Join(dir, name+"-F32.gguf")
		mixes := []synth.Mix{synth.MixF32, synth.MixF16, synth.MixBF16, synth.MixQ8_0, synth.MixQ4_K_M}
		if m.Shape.Experts > 0 {
			mixes = append(mixes, synth.MixMXFP4)
		}
		for _, mix := range mixes {
			t.Run(name+"-"+string(mix), func(t *testing.T) {
				path := filepath.Join(dir, name+"-"+string(mix)+".gguf")
				writeFile(t, m, mix, path)
				if mix != synth.MixF32 {
					defer os.Remove(path)
					theirs := filepath.Join(dir, name+"-"+string(mix)+"-llama.cpp.gguf")
					runLlamaref(t, bin, "quantize", f32, theirs, mix.LlamaCppName(), "--threads", "2")
					defer os.Remove(theirs)
					got, err1 := os.ReadFile(path)
					want, err2 := os.ReadFile(theirs)
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					if !bytes.Equal(got, want) {
						describeDiff(t, got, want)
					}
				}
				checkRuns(t, bin, m.Shape.Arch, path)
			})
		}
		os.Remove(f32)
	}
}

// checkRuns runs the model at path in llama.cpp and checks that it gives
// finite logits, embeddings or scores.
func checkRuns(t *testing.T, bin, arch, path string) {
	t.Helper()
	var values []float64
	if arch == synth.ArchBERT {
		var r struct {
			Sequences []struct {
				Embedding []float64 `json:"embedding"`
				Scores    []float64 `json:"scores"`
			} `json:"sequences"`
		}
		out := runLlamaref(t, bin, "embed", "--model", path, "--tokens", "1,2,3;4,5,6,7", "--digits", "6")
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("embed output: %v\n%.300s", err, out)
		}
		for _, s := range r.Sequences {
			values = append(values, s.Embedding...)
			values = append(values, s.Scores...)
		}
	} else {
		var r struct {
			Prefill, Decode []struct {
				Logits []float64 `json:"logits"`
			}
		}
		out := runLlamaref(t, bin, "logits", "--model", path, "--tokens", "1,2,3", "--decode", "1", "--digits", "6")
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("logits output: %v\n%.300s", err, out)
		}
		for _, row := range append(r.Prefill, r.Decode...) {
			values = append(values, row.Logits...)
		}
	}
	if len(values) == 0 {
		t.Fatal("llama.cpp gave no values")
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("value %d is %v", i, v)
		}
	}
}

// TestHeavyRealShapes writes every real-shape preset whole in Q4_K_M (what
// the benchmarks use) and, with SMOLGO_LLAMAREF set, runs it in llama.cpp.
// It takes minutes and up to about 2 GB of disk per model, so it runs only
// with SMOLGO_HEAVY=1 (SMOLGO_PRESETS=a,b picks presets):
//
//	SMOLGO_HEAVY=1 SMOLGO_LLAMAREF=$(../shared/tools/llamaref/build.sh) go test -run HeavyRealShapes -v -timeout 1h ./internal/synth/
func TestHeavyRealShapes(t *testing.T) {
	if os.Getenv("SMOLGO_HEAVY") != "1" {
		t.Skip("set SMOLGO_HEAVY=1 to write the real shapes whole")
	}
	bin := os.Getenv("SMOLGO_LLAMAREF")
	dir := t.TempDir()
	for _, name := range synth.PresetNames() {
		m, _ := synth.Preset(name)
		if m.Shape.Vocab == 0 || !wanted(name) {
			continue // a tiny golden preset, or not picked
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+"-Q4_K_M.gguf")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			if err := synth.Write(context.Background(), f, m, synth.Options{Mix: synth.MixQ4_K_M}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(path); err == nil {
				t.Logf("%s: %d bytes", name, st.Size())
			}
			if bin != "" {
				checkRuns(t, bin, m.Shape.Arch, path)
			}
		})
	}
}

func wanted(name string) bool {
	list := os.Getenv("SMOLGO_PRESETS")
	if list == "" {
		return true
	}
	for _, n := range strings.Split(list, ",") {
		if n == name {
			return true
		}
	}
	return false
}

// TestLlamarefQuantizesMoE holds synth's type choices on mixture-of-experts
// shapes the presets do not have to llama_model_quantize's, byte for byte:
// eight experts (llama.cpp gives such models q8_0 attn_k and attn_v and a
// q5_K attn_output in Q4_K_M), in every quantized mix synth writes, and
// eight blocks (use_more_bits over ffn_down_exps and ffn_down_shexp), and
// LFM2's hybrids, whose attn_v tensors only attention blocks have.
func TestLlamarefQuantizesMoE(t *testing.T) {
	bin := llamaref(t)
	dir := t.TempDir()
	all := []synth.Mix{synth.MixQ4_K_M, synth.MixQ8_0, synth.MixMXFP4, synth.MixQ4_0, synth.MixQ6_K}
	for _, c := range []struct {
		preset string
		change func(*synth.Shape)
		mixes  []synth.Mix
	}{
		{"qwen3moe-tiny", func(s *synth.Shape) { s.Experts = 8 }, all},
		{"gptoss-tiny", func(s *synth.Shape) { s.Experts = 8 }, []synth.Mix{synth.MixQ4_K_M, synth.MixMXFP4}},
		{"qwen3moe-tiny", func(s *synth.Shape) { s.Layers, s.ExpertFFN = 8, 256 }, []synth.Mix{synth.MixQ4_K_M}},
		// Mixtral's own eight experts, on the llama architecture; the
		// shared experts' ffn_down_shexp over eight blocks (use_more_bits
		// by the block in the name, as for the 3-D experts).
		{"mixtral-tiny", func(s *synth.Shape) { s.Experts = 8 }, all},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.Experts = 8 }, []synth.Mix{synth.MixQ4_K_M, synth.MixMXFP4}},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.Layers = 8 }, []synth.Mix{synth.MixQ4_K_M}},
		{"granitemoe-tiny", func(s *synth.Shape) { s.Layers, s.FFN = 8, 256 }, []synth.Mix{synth.MixQ4_K_M}},
		// LFM2's hybrids: llama.cpp's use_more_bits for attn_v counts the
		// attention blocks only.
		{"lfm2-tiny", func(s *synth.Shape) { s.Layers, s.AttnLayers = 9, []int{0, 3} }, []synth.Mix{synth.MixQ4_K_M}},
		{"lfm2moe-tiny", func(s *synth.Shape) { s.Layers, s.AttnLayers, s.DenseLead, s.ExpertFFN = 9, []int{0, 3, 5}, 2, 256 }, all},
	} {
		m, _ := synth.Preset(c.preset)
		c.change(&m.Shape)
		name := strings.ReplaceAll(m.Shape.String(), " ", "")
		f32 := filepath.Join(dir, "moe-F32.gguf")
		writeFile(t, m, synth.MixF32, f32)
		for _, mix := range c.mixes {
			t.Run(c.preset+"/"+name+"/"+string(mix), func(t *testing.T) {
				path, theirs := filepath.Join(dir, "moe-ours.gguf"), filepath.Join(dir, "moe-theirs.gguf")
				writeFile(t, m, mix, path)
				runLlamaref(t, bin, "quantize", f32, theirs, mix.LlamaCppName(), "--threads", "2")
				got, err1 := os.ReadFile(path)
				want, err2 := os.ReadFile(theirs)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal(got, want) {
					describeDiff(t, got, want)
				}
			})
		}
	}
}
