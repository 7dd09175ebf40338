package synth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// familiesManifest is ../shared/golden-families/manifest.json: every model
// with its SHA-256 and the llamaref synth flags that wrote it.
type familiesManifest struct {
	Models []struct {
		File   string   `json:"file"`
		SHA256 string   `json:"sha256"`
		Arch   string   `json:"arch"`
		Synth  []string `json:"synth"`
	} `json:"models"`
}

// TestReproducesGoldenFamilies checks every model of ../shared/golden-families
// against the preset of the same stem: the F32 files byte for byte (llamaref
// synth, that is llama.cpp's GGUF writer: the same tensors, data, keys and
// layout), and the Q8_0 and Q4_K_M files byte for byte too (llama.cpp's
// quantizer: its type per tensor, order and blocks). It also checks that
// the manifest's synth flags are the preset's, as llamarefArgs spells them.
func TestReproducesGoldenFamilies(t *testing.T) {
	reproduceGoldenDir(t, "golden-families", 14, nil)
}

// TestReproducesGoldenNext does the same for the mixture-of-experts models
// of ../shared/golden-next (qwen3moe-tiny and gptoss-tiny in F32, Q8_0,
// Q4_K_M, and gpt-oss's MXFP4, llama.cpp's MXFP4_MOE) and for LFM2's
// (lfm2-tiny); its other recurrent families (qwen35, granitehybrid) are
// not synth's.
func TestReproducesGoldenNext(t *testing.T) {
	reproduceGoldenDir(t, "golden-next", 10, map[string]bool{synth.ArchQwen3MoE: true, synth.ArchGPTOSS: true, synth.ArchLFM2: true})
}

// reproduceGoldenDir checks the models of ../shared/<dir> (at least
// atLeast of them; with archs, only those architectures) against the
// presets of their stems.
func reproduceGoldenDir(t *testing.T, dir string, atLeast int, archs map[string]bool) {
	raw, err := os.ReadFile(sharedtest.Path(t, dir+"/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man familiesManifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, gm := range man.Models {
		if archs == nil || archs[gm.Arch] {
			n++
		}
	}
	if n < atLeast {
		t.Fatalf("%s/manifest.json lists %d models synth writes, want at least %d", dir, n, atLeast)
	}
	for _, gm := range man.Models {
		if archs != nil && !archs[gm.Arch] {
			continue
		}
		base := strings.TrimSuffix(strings.TrimPrefix(gm.File, "models/"), ".gguf")
		cut := strings.LastIndexByte(base, '-')
		stem, mix := base[:cut], synth.Mix(base[cut+1:])
		t.Run(base, func(t *testing.T) {
			m, err := synth.Preset(stem)
			if err != nil {
				t.Fatalf("no preset for golden model %s: %v", gm.File, err)
			}
			args, err := llamarefArgs(m)
			if err != nil {
				t.Fatal(err)
			}
			if missing := missingFlags(gm.Synth, args); len(missing) != 0 {
				t.Errorf("manifest flags %v are not the preset's (%v): %v", gm.Synth, args, missing)
			}
			want, err := os.ReadFile(sharedtest.Path(t, dir+"/"+gm.File))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(want); hex.EncodeToString(sum[:]) != gm.SHA256 {
				t.Fatalf("%s does not match its manifest SHA-256", gm.File)
			}
			got := write(t, stem, mix)
			if !bytes.Equal(got, want) {
				describeDiff(t, got, want)
			}
		})
	}
}

// llamarefArgs spells m as llamaref synth flags (F32): every flag explicit,
// so that the file llamaref writes with them is the one Write writes.
// RopeFreqs "llama3" has no flag (llamaref draws random factors).
func llamarefArgs(m synth.Model) ([]string, error) {
	s := m.Shape
	if m.Tokenizer != nil {
		return nil, fmt.Errorf("%s: a copied tokenizer needs --vocab FILE", m.Name)
	}
	switch {
	case s.Arch == synth.ArchGranite || s.Arch == synth.ArchGraniteMoE || s.Arch == synth.ArchPhi3 || s.Arch == synth.ArchQwen2MoE || s.Arch == synth.ArchLFM2MoE,
		s.Arch == synth.ArchLlama && s.Experts > 0, // its --n-expert is for the MoE archs only
		s.Arch != synth.ArchBERT && s.Pooling != "":
		return nil, errNoArch
	}
	if m.Pre != "" || m.ChatTemplate != "" {
		return nil, fmt.Errorf("%s: llamaref writes pre-tokenizer smaug-bpe, and a chat template only from a file (--chat-template)", m.Name)
	}
	f32 := func(x float32) string { return strconv.FormatFloat(float64(x), 'g', -1, 32) }
	itoa := strconv.Itoa
	hd := s.HeadDim
	if hd == 0 {
		hd = s.Embd / s.Heads
	}
	a := []string{"--arch", s.Arch, "--name", m.Name, "--seed", strconv.FormatUint(m.Seed, 10),
		"--n-layer", itoa(s.Layers), "--n-embd", itoa(s.Embd), "--n-ff", itoa(s.FFN),
		"--n-head", itoa(s.Heads), "--n-head-kv", itoa(s.KVHeads), "--head-dim", itoa(hd), "--n-ctx", itoa(s.Context)}
	if s.Vocab != 0 {
		a = append(a, "--n-vocab", itoa(s.Vocab))
	}
	if s.Arch == synth.ArchBERT {
		// llamaref writes LayerNorm epsilon 1e-12 and no RoPE keys.
		if s.RMSEps != 1e-12 {
			return nil, fmt.Errorf("%s: llamaref's bert epsilon is 1e-12, not %g", m.Name, s.RMSEps)
		}
		a = append(a, "--pooling", cmpOr(s.Pooling, "mean"))
	} else {
		a = append(a, "--rope-base", f32(s.RopeBase), "--rms-eps", f32(s.RMSEps))
	}
	if s.RopeScaling != "" {
		a = append(a, "--rope-scaling", s.RopeScaling, "--rope-factor", f32(s.RopeFactor), "--rope-orig-ctx", itoa(s.RopeOrigContext))
	}
	if s.Untied {
		a = append(a, "--untied")
	}
	switch s.RopeFreqs {
	case "random":
		a = append(a, "--rope-freqs")
	case "llama3":
		return nil, fmt.Errorf("%s: llamaref has no llama3 rope factors", m.Name)
	}
	if s.Arch == synth.ArchGemma3 {
		a = append(a, "--swa", itoa(s.SlidingWindow))
		if s.SlidingWindow > 0 {
			a = append(a, "--swa-pattern", itoa(s.SlidingWindowPattern), "--rope-base-swa", f32(s.RopeBaseSWA))
		}
		if s.Softcap > 0 {
			a = append(a, "--softcap", f32(s.Softcap))
		}
	}
	if s.Experts > 0 {
		a = append(a, "--n-expert", itoa(s.Experts), "--n-expert-used", itoa(s.ExpertsUsed), "--n-ff-exp", itoa(s.ExpertFFN))
	}
	if s.Arch == synth.ArchGPTOSS {
		a = append(a, "--swa", itoa(s.SlidingWindow), "--swa-pattern", itoa(s.SlidingWindowPattern))
	}
	if s.Arch == synth.ArchLFM2 {
		a = append(a, "--l-cache", itoa(s.ShortConv))
		if s.AttnLayers != nil {
			var l []string
			for _, i := range s.AttnLayers {
				if i < s.Layers {
					l = append(l, itoa(i))
				}
			}
			a = append(a, "--attn-layers", strings.Join(l, ","))
		}
	}
	if m.RoundBF16 {
		a = append(a, "--round", "bf16")
	}
	return a, nil
}

// errNoArch is llamarefArgs' answer for an architecture llamaref synth
// does not write (granite, granitemoe, phi3, qwen2moe, llama with experts,
// lfm2moe, a decoder with a pooling type): llama.cpp still loads and runs synth's file
// (TestLlamarefLoads).
var errNoArch = errors.New("llamaref synth does not write this architecture")

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// missingFlags returns the flags (with their values) of manifest that args
// lacks; the manifest's "then quantize T" notes are not flags.
func missingFlags(manifest, args []string) []string {
	var missing []string
	for i := 0; i < len(manifest); i++ {
		flag := manifest[i]
		if !strings.HasPrefix(flag, "--") {
			continue
		}
		pair := []string{flag}
		if i+1 < len(manifest) && !strings.HasPrefix(manifest[i+1], "--") && !strings.HasPrefix(manifest[i+1], "then ") {
			pair = append(pair, manifest[i+1])
			i++
		}
		k := slices.Index(args, flag)
		if k < 0 || len(pair) == 2 && (k+1 >= len(args) || args[k+1] != pair[1]) {
			missing = append(missing, strings.Join(pair, " "))
		}
	}
	return missing
}

// loaderTensor is a tensor llama.cpp's loader creates, with the dimensions
// it asks for.
type loaderTensor struct {
	name string
	dims []uint64
}

// llamaCppTensors lists, independently of the package's own lists, the
// tensors llama.cpp's loader for the shape's architecture creates (its
// load_arch_tensors in src/models/<arch>.cpp), optional ones included only
// where the shape has them. llama.cpp refuses a file with any tensor it did
// not create ("wrong number of tensors"), so a file must hold exactly these.
// A trailing dimension of 1 is dropped, as GGUF stores it.
func llamaCppTensors(s synth.Shape, nVocab int) []loaderTensor {
	e, f, v := uint64(s.Embd), uint64(s.FFN), uint64(nVocab)
	hd := uint64(s.HeadDim)
	if hd == 0 {
		hd = e / uint64(s.Heads)
	}
	nq, nkv := hd*uint64(s.Heads), hd*uint64(s.KVHeads)
	var out []loaderTensor
	add := func(name string, dims ...uint64) {
		if len(dims) == 2 && dims[1] == 1 {
			dims = dims[:1]
		}
		out = append(out, loaderTensor{name, dims})
	}
	blk := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	if s.Arch == synth.ArchBERT {
		add("token_embd.weight", e, v)
		add("token_types.weight", e, 2)
		add("position_embd.weight", e, uint64(s.Context))
		add("token_embd_norm.weight", e)
		add("token_embd_norm.bias", e)
		if s.Pooling == "rank" {
			add("cls.weight", e, e)
			add("cls.bias", e)
			add("cls.output.weight", e, 1) // n_cls_out: one label
			add("cls.output.bias", 1)
		}
		for i := range s.Layers {
			for _, p := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				add(blk(i, p+".weight"), e, e)
				add(blk(i, p+".bias"), e)
			}
			for _, p := range []string{"attn_output_norm", "layer_output_norm"} {
				add(blk(i, p+".weight"), e)
				add(blk(i, p+".bias"), e)
			}
			add(blk(i, "ffn_up.weight"), e, f)
			add(blk(i, "ffn_up.bias"), f)
			add(blk(i, "ffn_down.weight"), f, e)
			add(blk(i, "ffn_down.bias"), e)
		}
		return out
	}
	x, n := uint64(s.ExpertFFN), uint64(s.Experts)
	if s.Arch == synth.ArchLlama || s.Arch == synth.ArchGraniteMoE {
		x = f // their loaders size the experts by n_ff
	}
	if s.Arch == synth.ArchLFM2 || s.Arch == synth.ArchLFM2MoE { // llama.cpp's lfm2.cpp and lfm2moe.cpp
		add("token_embd.weight", e, v)
		add("token_embd_norm.weight", e) // LLM_TENSOR_OUTPUT_NORM_LFM2
		if s.Untied {
			add("output.weight", e, v)
		}
		for i := range s.Layers {
			add(blk(i, "attn_norm.weight"), e)
			add(blk(i, "ffn_norm.weight"), e)
			if s.Arch == synth.ArchLFM2MoE && i >= s.DenseLead {
				add(blk(i, "ffn_gate_inp.weight"), e, n)
				add(blk(i, "ffn_gate_exps.weight"), e, x, n)
				add(blk(i, "ffn_up_exps.weight"), e, x, n)
				add(blk(i, "ffn_down_exps.weight"), x, e, n)
				add(blk(i, "exp_probs_b.bias"), n)
			} else {
				add(blk(i, "ffn_gate.weight"), e, f)
				add(blk(i, "ffn_up.weight"), e, f)
				add(blk(i, "ffn_down.weight"), f, e)
			}
			if slices.Contains(s.AttnLayers, i) || s.AttnLayers == nil && i%3 == 2 {
				add(blk(i, "attn_q_norm.weight"), hd)
				add(blk(i, "attn_k_norm.weight"), hd)
				add(blk(i, "attn_q.weight"), e, nq)
				add(blk(i, "attn_k.weight"), e, nkv)
				add(blk(i, "attn_v.weight"), e, nkv)
				add(blk(i, "attn_output.weight"), e, e)
			} else {
				add(blk(i, "shortconv.conv.weight"), uint64(s.ShortConv), e)
				add(blk(i, "shortconv.in_proj.weight"), e, 3*e)
				add(blk(i, "shortconv.out_proj.weight"), e, e)
			}
		}
		return out
	}
	add("token_embd.weight", e, v)
	add("output_norm.weight", e)
	if s.Untied {
		add("output.weight", e, v)
	}
	if s.Arch == synth.ArchGPTOSS { // llama.cpp's openai-moe.cpp
		for i := range s.Layers {
			for _, p := range []struct {
				name string
				dims []uint64
			}{
				{"attn_norm.weight", []uint64{e}}, {"post_attention_norm.weight", []uint64{e}},
				{"attn_q.weight", []uint64{e, nq}}, {"attn_q.bias", []uint64{nq}},
				{"attn_k.weight", []uint64{e, nkv}}, {"attn_k.bias", []uint64{nkv}},
				{"attn_v.weight", []uint64{e, nkv}}, {"attn_v.bias", []uint64{nkv}},
				{"attn_output.weight", []uint64{nq, e}}, {"attn_output.bias", []uint64{e}},
				{"attn_sinks.weight", []uint64{uint64(s.Heads)}},
				{"ffn_gate_inp.weight", []uint64{e, n}}, {"ffn_gate_inp.bias", []uint64{n}},
				{"ffn_gate_exps.weight", []uint64{e, x, n}}, {"ffn_gate_exps.bias", []uint64{x, n}},
				{"ffn_up_exps.weight", []uint64{e, x, n}}, {"ffn_up_exps.bias", []uint64{x, n}},
				{"ffn_down_exps.weight", []uint64{x, e, n}}, {"ffn_down_exps.bias", []uint64{e, n}},
			} {
				add(blk(i, p.name), p.dims...)
			}
		}
		return out
	}
	if s.RopeFreqs != "" {
		add("rope_freqs.weight", hd/2) // blk.0's, shared by every layer
	}
	if s.LongRope {
		rd := uint64(s.RopeDims)
		if rd == 0 {
			rd = hd
		}
		add("rope_factors_long.weight", rd/2) // blk.0's, shared by every layer
		add("rope_factors_short.weight", rd/2)
	}
	for i := range s.Layers {
		add(blk(i, "attn_norm.weight"), e)
		if s.Arch == synth.ArchPhi3 { // llama.cpp's phi3 reads fused q, k, v and gate+up
			add(blk(i, "attn_qkv.weight"), e, nq+2*nkv)
			add(blk(i, "ffn_up.weight"), e, 2*f)
		} else {
			add(blk(i, "attn_q.weight"), e, nq)
			add(blk(i, "attn_k.weight"), e, nkv)
			add(blk(i, "attn_v.weight"), e, nkv)
		}
		add(blk(i, "attn_output.weight"), nq, e)
		add(blk(i, "ffn_norm.weight"), e)
		switch {
		case s.Arch == synth.ArchPhi3:
			add(blk(i, "ffn_down.weight"), f, e)
		case s.Experts > 0: // qwen3moe.cpp, qwen2moe.cpp, llama.cpp, granite.cpp (granitemoe)
			add(blk(i, "ffn_gate_inp.weight"), e, n)
			add(blk(i, "ffn_gate_exps.weight"), e, x, n)
			add(blk(i, "ffn_up_exps.weight"), e, x, n)
			add(blk(i, "ffn_down_exps.weight"), x, e, n)
			if sh := uint64(s.SharedFFN); sh > 0 {
				// qwen2moe's is required (its width n_ff without the
				// key), granitemoe's where the key says so, llama's
				// never (its loader reads no shared width).
				add(blk(i, "ffn_gate_shexp.weight"), e, sh)
				add(blk(i, "ffn_up_shexp.weight"), e, sh)
				add(blk(i, "ffn_down_shexp.weight"), sh, e)
			}
			if s.Arch == synth.ArchQwen2MoE {
				add(blk(i, "ffn_gate_inp_shexp.weight"), e)
			}
		default:
			add(blk(i, "ffn_gate.weight"), e, f)
			add(blk(i, "ffn_up.weight"), e, f)
			add(blk(i, "ffn_down.weight"), f, e)
		}
		switch s.Arch {
		case synth.ArchQwen2, synth.ArchQwen2MoE:
			add(blk(i, "attn_q.bias"), nq)
			add(blk(i, "attn_k.bias"), nkv)
			add(blk(i, "attn_v.bias"), nkv)
		case synth.ArchQwen3, synth.ArchQwen3MoE:
			add(blk(i, "attn_q_norm.weight"), hd)
			add(blk(i, "attn_k_norm.weight"), hd)
		case synth.ArchGemma3:
			add(blk(i, "attn_q_norm.weight"), hd)
			add(blk(i, "attn_k_norm.weight"), hd)
			add(blk(i, "post_attention_norm.weight"), e)
			add(blk(i, "post_ffw_norm.weight"), e)
		}
	}
	return out
}

// llamaCppKeys lists the metadata llama.cpp reads for the shape, with the
// values it must find. A key llama.cpp requires, or one whose absence it
// would fill with a wrong default (key_length when heads × head size is not
// the hidden size), is here.
func llamaCppKeys(s synth.Shape, nVocab int) map[string]any {
	a := s.Arch + "."
	hd := s.HeadDim
	if hd == 0 {
		hd = s.Embd / s.Heads
	}
	k := map[string]any{
		"general.architecture":        s.Arch,
		a + "block_count":             uint32(s.Layers),
		a + "context_length":          uint32(s.Context),
		a + "embedding_length":        uint32(s.Embd),
		a + "feed_forward_length":     uint32(s.FFN),
		a + "attention.head_count":    uint32(s.Heads),
		a + "attention.head_count_kv": uint32(s.KVHeads),
		a + "vocab_size":              uint32(nVocab),
	}
	if hd*s.Heads != s.Embd {
		k[a+"attention.key_length"] = uint32(hd)
		k[a+"attention.value_length"] = uint32(hd)
	}
	if s.Arch == synth.ArchBERT {
		k[a+"attention.layer_norm_epsilon"] = s.RMSEps
		k[a+"attention.causal"] = false
		k[a+"pooling_type"] = map[string]uint32{"": 1, "mean": 1, "cls": 2, "rank": 4}[s.Pooling]
		k["tokenizer.ggml.token_type_count"] = uint32(2)
		if s.Pooling == "rank" {
			k[a+"classifier.output_labels"] = []string{"score"}
		}
		return k
	}
	k[a+"attention.layer_norm_rms_epsilon"] = s.RMSEps
	k[a+"rope.freq_base"] = s.RopeBase
	k[a+"rope.dimension_count"] = uint32(hd)
	if s.RopeDims != 0 {
		k[a+"rope.dimension_count"] = uint32(s.RopeDims)
	}
	if s.LongRope {
		k[a+"rope.scaling.original_context_length"] = uint32(s.RopeOrigContext)
	}
	if s.Experts > 0 {
		k[a+"expert_count"] = uint32(s.Experts)
		k[a+"expert_used_count"] = uint32(s.ExpertsUsed)
		if s.Arch != synth.ArchLlama && s.Arch != synth.ArchGraniteMoE {
			k[a+"expert_feed_forward_length"] = uint32(s.ExpertFFN)
		}
	}
	if s.SharedFFN > 0 {
		k[a+"expert_shared_feed_forward_length"] = uint32(s.SharedFFN)
	}
	if s.Arch == synth.ArchGranite || s.Arch == synth.ArchGraniteMoE {
		k[a+"logit_scale"] = s.Granite.Logit // required
	}
	switch {
	case s.Arch == synth.ArchGPTOSS: // the pattern defaults to 2
		k[a+"attention.sliding_window"] = uint32(s.SlidingWindow)
	case s.SlidingWindow > 0:
		k[a+"attention.sliding_window"] = uint32(s.SlidingWindow)
		k[a+"attention.sliding_window_pattern"] = uint32(s.SlidingWindowPattern)
		k[a+"rope.freq_base_swa"] = s.RopeBaseSWA
	}
	if s.Softcap > 0 {
		k[a+"final_logit_softcapping"] = s.Softcap
	}
	if s.Pooling != "" {
		k[a+"pooling_type"] = map[string]uint32{"last": 3}[s.Pooling]
	}
	if s.Arch == synth.ArchLFM2 || s.Arch == synth.ArchLFM2MoE {
		// Per block, 0 for a short convolution (is_recr), read by
		// get_key_or_arr; the kernel length is required.
		heads := make([]int32, s.Layers)
		for i := range heads {
			if slices.Contains(s.AttnLayers, i) || s.AttnLayers == nil && i%3 == 2 {
				heads[i] = int32(s.KVHeads)
			}
		}
		k[a+"attention.head_count_kv"] = heads
		k[a+"shortconv.l_cache"] = uint32(s.ShortConv)
	}
	if s.Arch == synth.ArchLFM2MoE {
		k[a+"leading_dense_block_count"] = uint32(s.DenseLead)
		k[a+"expert_gating_func"] = uint32(2) // required: the converter's sigmoid
	}
	return k
}

// TestPresetsAreWhatLlamaCppLoads checks every preset's tensor list and
// metadata against what llama.cpp's loader for its architecture reads,
// without generating any weights (the real shapes would take minutes). The
// tiny presets are also written in F32 and Q4_K_M and read back.
func TestPresetsAreWhatLlamaCppLoads(t *testing.T) {
	for _, name := range synth.PresetNames() {
		t.Run(name, func(t *testing.T) {
			m, err := synth.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Shape.Validate(); err != nil {
				t.Fatal(err)
			}
			if synth.PresetAbout(name) == "" {
				t.Error("no description")
			}
			nVocab := m.Shape.Vocab
			if nVocab == 0 {
				nVocab = synth.BuiltinVocabSize
			}
			for _, mix := range []synth.Mix{synth.MixF32, synth.MixQ4_K_M} {
				tensors, err := m.Tensors(context.Background(), mix, synth.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var got []loaderTensor
				for _, tt := range tensors {
					got = append(got, loaderTensor{tt.Name, tt.Dims})
					if len(tt.Dims) == 1 && tt.Type != gguf.TypeF32 {
						t.Errorf("%s: vector %s is %s, want f32", mix, tt.Name, tt.Type)
					}
				}
				checkTensorSet(t, string(mix), got, llamaCppTensors(m.Shape, nVocab))
				kv, err := m.Metadata(mix)
				if err != nil {
					t.Fatal(err)
				}
				checkKeys(t, string(mix), kv, llamaCppKeys(m.Shape, nVocab))
			}
			if m.Shape.Layers > 8 || m.Shape.Vocab > 0 {
				return // a real shape: its data is not generated here
			}
			for _, mix := range []synth.Mix{synth.MixF32, synth.MixQ4_K_M} {
				f, err := gguf.Parse(write(t, name, mix))
				if err != nil {
					t.Fatalf("%s: %v", mix, err)
				}
				var got []loaderTensor
				for _, tt := range f.Tensors {
					got = append(got, loaderTensor{tt.Name, tt.Dims})
				}
				checkTensorSet(t, string(mix)+" written", got, llamaCppTensors(m.Shape, nVocab))
			}
		})
	}
}

func checkTensorSet(t *testing.T, what string, got, want []loaderTensor) {
	t.Helper()
	key := func(x loaderTensor) string { return fmt.Sprint(x.name, x.dims) }
	g, w := map[string]bool{}, map[string]bool{}
	for _, x := range got {
		g[key(x)] = true
	}
	for _, x := range want {
		w[key(x)] = true
		if !g[key(x)] {
			t.Errorf("%s: llama.cpp needs %s, not written", what, key(x))
		}
	}
	for _, x := range got {
		if !w[key(x)] {
			t.Errorf("%s: %s is written but llama.cpp's loader does not read it (it rejects the file)", what, key(x))
		}
	}
	if len(got) != len(g) {
		t.Errorf("%s: %d tensors, %d distinct", what, len(got), len(g))
	}
}

func checkKeys(t *testing.T, what string, kv []gguf.KV, want map[string]any) {
	t.Helper()
	have := map[string]any{}
	for _, x := range kv {
		if _, dup := have[x.Key]; dup {
			t.Errorf("%s: key %s twice", what, x.Key)
		}
		have[x.Key] = x.Value
	}
	for k, v := range want {
		got, ok := have[k]
		if !ok {
			t.Errorf("%s: key %s missing", what, k)
		} else if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("%s: %s = %T %v, want %T %v", what, k, got, got, v, v)
		}
	}
	if toks, ok := have["tokenizer.ggml.tokens"].([]string); !ok || uint32(len(toks)) != have[want["general.architecture"].(string)+".vocab_size"] {
		t.Errorf("%s: tokenizer.ggml.tokens does not hold vocab_size tokens", what)
	}
}

// TestRealShapeParameters counts each real preset's parameters against the
// model it copies (the published safetensors' count, the tied output
// matrix once; BERT without the pooler layer, which GGUF does not carry;
// Llama without rope_freqs.weight, which is computed, not trained).
func TestRealShapeParameters(t *testing.T) {
	for name, want := range map[string]uint64{
		"qwen3-0.6b":   596_049_920,
		"qwen3-1.7b":   1_720_574_976,
		"qwen2.5-0.5b": 494_032_768,
		"qwen2.5-1.5b": 1_543_714_304,
		"llama3.2-1b":  1_235_814_400,
		"llama3.2-3b":  3_212_749_824,
		"gemma3-270m":  268_098_176,
		"gemma3-1b":    999_885_952,
		"bge-small":    33_360_000 - (384*384 + 384),
		// SmolLM2's config.json shapes, counted: 134.5 M, 361.8 M and
		// 1.71 B, the sizes Hugging Face lists.
		"smollm2-135m": 134_515_008,
		"smollm2-360m": 361_821_120,
		"smollm2-1.7b": 1_711_376_384,
		// The MoE models, counted from their config.json the same way:
		// Qwen3-30B-A3B's 30.53 B (untied output) and gpt-oss-20b's 20.91 B,
		// llama.cpp's count for its GGUF.
		"qwen3-30b-a3b": 30_532_122_624,
		"gpt-oss-20b":   20_914_757_184,
	} {
		m, err := synth.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		tensors, err := m.Tensors(context.Background(), synth.MixF32, synth.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, tt := range tensors {
			if tt.Name == "rope_freqs.weight" {
				continue
			}
			k := uint64(1)
			for _, d := range tt.Dims {
				k *= d
			}
			n += k
		}
		if n != want {
			t.Errorf("%s: %d parameters, want %d (%+d)", name, n, want, int64(n)-int64(want))
		}
	}
}

// TestSmolLM2Presets checks what makes the SmolLM2 presets SmolLM2's files
// besides their shape: the "smollm" pre-tokenizer, and SmolLM2-Instruct's
// chat template, the same text as package chatml's reference copy, after
// the tokenizer keys (where llama.cpp's converter and llamaref
// --chat-template put it). The other presets keep llamaref's smaug-bpe and
// no template.
func TestSmolLM2Presets(t *testing.T) {
	want, err := os.ReadFile("../../models/llamaarch/chatml/testdata/HuggingFaceTB-SmolLM2-1.7B-Instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range synth.PresetNames() {
		m, _ := synth.Preset(name)
		kv, err := m.Metadata(synth.MixQ8_0)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]any{}
		lastTokenizer, template := -1, -1
		for i, x := range kv {
			keys[x.Key] = x.Value
			switch {
			case x.Key == "tokenizer.chat_template":
				template = i
			case strings.HasPrefix(x.Key, "tokenizer."):
				lastTokenizer = i
			}
		}
		if !strings.HasPrefix(name, "smollm2-") {
			if keys["tokenizer.ggml.pre"] != "smaug-bpe" || template >= 0 {
				t.Errorf("%s: pre %v, template at %d; want smaug-bpe and none", name, keys["tokenizer.ggml.pre"], template)
			}
			continue
		}
		if keys["tokenizer.ggml.pre"] != "smollm" || keys["general.architecture"] != synth.ArchLlama {
			t.Errorf("%s: pre %v, arch %v; want smollm, llama", name, keys["tokenizer.ggml.pre"], keys["general.architecture"])
		}
		if keys["tokenizer.chat_template"] != string(want) || template != lastTokenizer+1 {
			t.Errorf("%s: chat template at %d (tokenizer keys end at %d) differs from chatml's copy:\n%v", name, template, lastTokenizer, keys["tokenizer.chat_template"])
		}
	}
}

// TestLlama3RopeFactors reads rope_freqs.weight of the llama3.2-1b preset
// (only that tensor is generated): Llama 3.2's scaling (factor 32 beyond
// wavelengths of 8192 positions, 1 under 2048) on head size 64 and base
// 500,000 leaves pairs 0-14 alone, divides pairs 18-31 by 32 and
// interpolates pairs 15-17.
func TestLlama3RopeFactors(t *testing.T) {
	m, _ := synth.Preset("llama3.2-1b")
	tensors, err := m.Tensors(context.Background(), synth.MixQ4_K_M, synth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tensors, func(x gguf.WriterTensor) bool { return x.Name == "rope_freqs.weight" })
	if i < 0 || tensors[i].Type != gguf.TypeF32 || !slices.Equal(tensors[i].Dims, []uint64{32}) {
		t.Fatalf("rope_freqs.weight: %+v", tensors[i])
	}
	var buf bytes.Buffer
	if err := tensors[i].Write(&buf); err != nil {
		t.Fatal(err)
	}
	f := make([]float32, 32)
	for k := range f {
		f[k] = math.Float32frombits(binary.LittleEndian.Uint32(buf.Bytes()[4*k:]))
	}
	for k, v := range f {
		switch {
		case k <= 14 && v != 1, k >= 18 && v != 32, k > 14 && k < 18 && !(v > f[k-1] && v < 32):
			t.Errorf("factor %d = %v (all: %v)", k, v, f)
		}
	}
}

// TestBERTRealTokenizer checks that a BERT vocabulary which carries
// tokenizer.ggml.token_type_count (llama.cpp's ggml-vocab-bert-bge.gguf
// does) keeps it and gets no second copy.
func TestBERTRealTokenizer(t *testing.T) {
	m, _ := synth.Preset("bert-tiny")
	v, err := synth.BuiltinVocab(0)
	if err != nil {
		t.Fatal(err)
	}
	m.Tokenizer = []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "bert"},
		{Key: "tokenizer.ggml.tokens", Value: v.Tokens},
		{Key: "tokenizer.ggml.token_type_count", Value: uint32(2)},
	}
	kv, err := m.Metadata(synth.MixF32)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range kv {
		if x.Key == "tokenizer.ggml.token_type_count" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("token_type_count written %d times", n)
	}
}

func TestValidateFamilies(t *testing.T) {
	for _, tc := range []struct {
		preset string
		change func(*synth.Shape)
		want   string
	}{
		{"qwen3-tiny", func(s *synth.Shape) { s.SlidingWindow = 32 }, "for arch gemma3"},
		{"qwen3-tiny", func(s *synth.Shape) { s.RopeFreqs = "random" }, "for arch llama"},
		{"llama32-tiny", func(s *synth.Shape) { s.RopeFreqs = "llama3" }, "llama3 rope factors need"},
		{"llama32-tiny", func(s *synth.Shape) { s.RopeFreqs = "yarn" }, "want random or llama3"},
		{"gemma3-tiny", func(s *synth.Shape) { s.SlidingWindowPattern = 0 }, "pattern ≥ 1"},
		{"bert-tiny", func(s *synth.Shape) { s.Pooling = "last" }, "want mean, cls or rank"},
		{"qwen3-tiny", func(s *synth.Shape) { s.Pooling = "cls" }, "pooling is for arch bert"},
		{"bert-tiny", func(s *synth.Shape) { s.KVHeads = 2 }, "no grouped-query attention"},
		{"bert-tiny", func(s *synth.Shape) { s.Untied = true }, "no output matrix"},
		{"qwen2-tiny", func(s *synth.Shape) { s.HeadDim = 64 }, "heads × head dim = hidden size"},
		{"qwen2-tiny", func(s *synth.Shape) { s.Pooling = "mean" }, "for arch bert"},
		{"qwen2-tiny", func(s *synth.Shape) { s.Arch = "gemma2" }, "want smollm3, llama"},
		{"qwen3moe-tiny", func(s *synth.Shape) { s.Experts = 0 }, "qwen3moe needs experts"},
		{"qwen3moe-tiny", func(s *synth.Shape) { s.ExpertsUsed = 5 }, "1 ≤ used ≤ experts"},
		{"qwen3-tiny", func(s *synth.Shape) { s.Experts, s.ExpertsUsed, s.ExpertFFN = 4, 2, 128 }, "experts are for arch qwen3moe, gpt-oss, qwen2moe, granitemoe, lfm2moe or llama"},
		{"mixtral-tiny", func(s *synth.Shape) { s.ExpertFFN = 128 }, "feed_forward_length (FFN) wide"},
		{"granitemoe-tiny", func(s *synth.Shape) { s.ExpertFFN = 128 }, "feed_forward_length (FFN) wide"},
		{"mixtral-tiny", func(s *synth.Shape) { s.Experts = 0 }, "llama needs experts"},
		{"mixtral-tiny", func(s *synth.Shape) { s.SharedFFN = 256 }, "shared expert is for arch qwen2moe or granitemoe"},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.SharedFFN = 0 }, "qwen2moe needs a shared expert"},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.ExpertFFN = 0 }, "positive expert FFN"},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.Untied = false }, "untied output.weight"},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.HeadDim = 64 }, "heads × head dim = hidden size"},
		{"granitemoe-tiny", func(s *synth.Shape) { s.SharedFFN = -1 }, "negative"},
		{"qwen2moe-tiny", func(s *synth.Shape) { s.Granite.Logit = 2 }, "for arch granite"},
		{"gptoss-tiny", func(s *synth.Shape) { s.Untied = false }, "untied output.weight"},
		{"gptoss-tiny", func(s *synth.Shape) { s.SlidingWindow = 0 }, "gpt-oss needs a sliding window"},
		{"gptoss-tiny", func(s *synth.Shape) { s.RopeBaseSWA = 1e4 }, "local rope base is for arch gemma3"},
		{"qwen3moe-tiny", func(s *synth.Shape) { s.SlidingWindow = 32 }, "sliding window is for arch gemma3"},
		{"lfm2-tiny", func(s *synth.Shape) { s.ShortConv = 1 }, "short convolution of at least 2"},
		{"lfm2-tiny", func(s *synth.Shape) { s.AttnLayers = []int{-1} }, "attention block -1 is negative"},
		{"lfm2-tiny", func(s *synth.Shape) { s.HeadDim = 64 }, "heads × head dim = hidden size"},
		{"lfm2-tiny", func(s *synth.Shape) { s.DenseLead = 1 }, "dense leading blocks is for arch lfm2moe"},
		{"lfm2moe-tiny", func(s *synth.Shape) { s.Experts = 0 }, "lfm2moe needs experts"},
		{"lfm2moe-tiny", func(s *synth.Shape) { s.DenseLead = 4 }, "4 dense leading blocks of 3"},
		{"qwen3-tiny", func(s *synth.Shape) { s.ShortConv = 3 }, "short convolutions are for arch lfm2 or lfm2moe"},
	} {
		m, _ := synth.Preset(tc.preset)
		tc.change(&m.Shape)
		if err := m.Shape.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s changed: %v, want an error with %q", tc.preset, err, tc.want)
		}
	}
}
