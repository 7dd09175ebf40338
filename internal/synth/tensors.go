package synth

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strconv"
)

// tensorSpec is one tensor to generate: its name, ggml dimensions, block
// (-1 outside blocks), and how its values are drawn (kind, scale).
type tensorSpec struct {
	name   string
	dims   []uint64
	layer  int
	kind   kind
	scale  float64
	values []float32 // kindFixed: the values themselves
}

// kind is how a tensor's values are drawn from its gaussian stream z. The
// first five are llamaref's tensor kinds 0 to 4, evaluated with the same
// double-precision operations in the same order and rounded to float32 once.
type kind int

const (
	kindGauss       kind = iota // scale·z: weights, biases, embeddings
	kindNorm                    // 1 + scale·z: norm weights (GGUF stores Gemma's 1+w too)
	kindSignedNorm              // ±(1 + scale·z), the sign from one more draw: output_norm
	kindRopeFactor              // 1 + 3|z|: rope_freqs.weight "random"
	kindAroundScale             // scale·(1 + 0.05·z): Q/K norm weights
	kindFixed                   // values computed, not drawn: rope_freqs.weight "llama3"
)

// Init scales (see the package comment): logits std 4, raw attention
// scores std 2, attention output gain 0.3, FFN down gain 3 in block 0 and
// 0.1 after. BERT's encoder has its own (bert below).
const (
	logitStd      = 4.0
	attnStd       = 2.0
	attnOutGain   = 0.3
	ffnGain       = 0.1
	ffnGainFirst  = 3.0
	normWeightStd = 0.05
	biasStd       = 0.1 // qwen2's Q/K/V biases
	routerStd     = 2.0 // MoE routers: N(0, routerStd²/Embd), router logits of std about 2
	// lfm2moe's selection bias exp_probs_b.bias, added to sigmoid gates
	// (of spread about 0.3 with router logits of std 2).
	selectionBiasStd = 0.25

	bertTokenTypes = 2 // token_types.weight rows (sentence A and B)
)

// specs lists the model's tensors in llamaref's order, which is the order
// of convert_hf_to_gguf.py's files: token_embd, then each block's tensors,
// then output_norm and output.
func (m Model) specs(nVocab uint64) []tensorSpec {
	switch m.Shape.Arch {
	case ArchBERT:
		return m.bertSpecs(nVocab)
	case ArchGPTOSS:
		return m.gptOSSSpecs(nVocab)
	case ArchLFM2, ArchLFM2MoE:
		return m.lfm2Specs(nVocab)
	}
	s := m.Shape
	e, f := uint64(s.Embd), uint64(s.FFN)
	hd := uint64(s.headDim())
	nq, nkv := uint64(s.Heads)*hd, uint64(s.KVHeads)*hd
	qGain := math.Sqrt(attnStd)
	w := func(name string, layer int, ne0, ne1 uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{ne0, ne1}, layer: layer, scale: scale}
	}
	vec := func(name string, layer int, n uint64, k kind, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{n}, layer: layer, kind: k, scale: scale}
	}
	norm := func(name string, layer int) tensorSpec { return vec(name, layer, e, kindNorm, normWeightStd) }

	out := []tensorSpec{w("token_embd.weight", -1, e, nVocab, gain(logitStd, e))}
	switch s.RopeFreqs {
	case "random":
		out = append(out, vec("rope_freqs.weight", -1, hd/2, kindRopeFactor, 0))
	case "llama3":
		r := vec("rope_freqs.weight", -1, hd/2, kindFixed, 0)
		r.values = llama3RopeFactors(s.Llama3Rope, float64(s.RopeBase), int(hd))
		out = append(out, r)
	}
	if s.LongRope {
		rd := uint64(cmp.Or(s.RopeDims, int(hd)))
		out = append(out,
			vec("rope_factors_long.weight", -1, rd/2, kindRopeFactor, 0),
			vec("rope_factors_short.weight", -1, rd/2, kindRopeFactor, 0))
	}
	qk := qkNormScale(int(hd))
	for i := range s.Layers {
		b := "blk." + strconv.Itoa(i) + "."
		down := ffnGain
		if i == 0 {
			down = ffnGainFirst
		}
		out = append(out, norm(b+"attn_norm.weight", i))
		if s.Arch == ArchPhi3 {
			// One tensor: the q rows, then k, then v.
			out = append(out, w(b+"attn_qkv.weight", i, e, nq+2*nkv, gain(qGain, e)))
		} else {
			out = append(out,
				w(b+"attn_q.weight", i, e, nq, gain(qGain, e)),
				w(b+"attn_k.weight", i, e, nkv, gain(qGain, e)),
				w(b+"attn_v.weight", i, e, nkv, gain(1, e)))
		}
		if s.Arch == ArchQwen2 || s.Arch == ArchQwen2MoE {
			out = append(out,
				vec(b+"attn_q.bias", i, nq, kindGauss, biasStd),
				vec(b+"attn_k.bias", i, nkv, kindGauss, biasStd),
				vec(b+"attn_v.bias", i, nkv, kindGauss, biasStd))
		}
		if s.Arch == ArchQwen3 || s.Arch == ArchGemma3 || s.Arch == ArchQwen3MoE {
			// One weight per element of a head, shared by every head.
			out = append(out,
				vec(b+"attn_q_norm.weight", i, hd, kindAroundScale, qk),
				vec(b+"attn_k_norm.weight", i, hd, kindAroundScale, qk))
		}
		out = append(out, w(b+"attn_output.weight", i, nq, e, gain(attnOutGain, nq)))
		if s.Arch == ArchGemma3 {
			// Gemma's RMSNorm multiplies by 1+w and its checkpoints
			// store w, near 0; llama.cpp's converter adds the 1 when it
			// writes the GGUF (norm_shift), so GGUF Gemma norms sit near
			// 1 like every other family's, and a plain RMSNorm reads
			// them. synth writes them as GGUF stores them.
			out = append(out, norm(b+"post_attention_norm.weight", i))
		}
		out = append(out, norm(b+"ffn_norm.weight", i))
		if s.Experts > 0 {
			out = append(out, m.experts(b, i, down)...)
			continue
		}
		if s.Arch == ArchPhi3 {
			// One tensor: the gate rows, then up.
			out = append(out, w(b+"ffn_up.weight", i, e, 2*f, gain(1, e)))
		} else {
			out = append(out,
				w(b+"ffn_gate.weight", i, e, f, gain(1, e)),
				w(b+"ffn_up.weight", i, e, f, gain(1, e)))
		}
		out = append(out, w(b+"ffn_down.weight", i, f, e, gain(down, f)))
		if s.Arch == ArchGemma3 {
			out = append(out, norm(b+"post_ffw_norm.weight", i))
		}
	}
	// Random signs on output_norm keep tied embeddings from favouring the
	// current token (a bias of about |e|²/rms(x)), which makes greedy
	// decoding repeat itself.
	out = append(out, vec("output_norm.weight", -1, e, kindSignedNorm, normWeightStd))
	if s.Untied {
		out = append(out, w("output.weight", -1, e, nVocab, gain(logitStd, e)))
	}
	return out
}

// experts lists a block's router and experts (llamaref's order: router,
// gate, up, down), with llamaref's scales: the router routerStd·(1/√Embd)
// (a product, as llamaref computes it), gate and up 1/√Embd, down the
// block's FFN gain over √(expert width). A shared expert (SharedFFN)
// follows, scaled as an expert of its width, after qwen2moe's gate vector
// ffn_gate_inp_shexp of 1/√Embd, whose product with the normalized hidden
// state (of norm about √Embd) then has a std of about 1.
func (m Model) experts(b string, layer int, down float64) []tensorSpec {
	s := m.Shape
	e, x, n := uint64(s.Embd), uint64(s.expertWidth()), uint64(s.Experts)
	wIn := 1.0 / math.Sqrt(float64(e))
	out := []tensorSpec{
		{name: b + "ffn_gate_inp.weight", dims: []uint64{e, n}, layer: layer, scale: routerStd * wIn},
		{name: b + "ffn_gate_exps.weight", dims: []uint64{e, x, n}, layer: layer, scale: wIn},
		{name: b + "ffn_up_exps.weight", dims: []uint64{e, x, n}, layer: layer, scale: wIn},
		{name: b + "ffn_down_exps.weight", dims: []uint64{x, e, n}, layer: layer, scale: gain(down, x)},
	}
	if s.SharedFFN == 0 {
		return out
	}
	sh := uint64(s.SharedFFN)
	if s.Arch == ArchQwen2MoE {
		out = append(out, tensorSpec{name: b + "ffn_gate_inp_shexp.weight", dims: []uint64{e}, layer: layer, scale: wIn})
	}
	return append(out,
		tensorSpec{name: b + "ffn_gate_shexp.weight", dims: []uint64{e, sh}, layer: layer, scale: wIn},
		tensorSpec{name: b + "ffn_up_shexp.weight", dims: []uint64{e, sh}, layer: layer, scale: wIn},
		tensorSpec{name: b + "ffn_down_shexp.weight", dims: []uint64{sh, e}, layer: layer, scale: gain(down, sh)})
}

// gptOSSSpecs lists a gpt-oss model's tensors (llama.cpp's
// src/models/openai-moe.cpp) in llamaref's order and with its scales:
// attention with biases (0.1, the output's 0.02) and per-head sinks
// (N(0, 1)), post_attention_norm as the FFN's norm, a router with a bias,
// and experts whose biases are 2-D, one row per expert ([ExpertFFN,
// Experts] for gate and up, [Embd, Experts] for down); always an untied
// output. llamaref scales Q, K, the router and the output by products with
// 1/√Embd, not quotients, and so does this.
func (m Model) gptOSSSpecs(nVocab uint64) []tensorSpec {
	s := m.Shape
	e := uint64(s.Embd)
	hd := uint64(s.headDim())
	nq, nkv := uint64(s.Heads)*hd, uint64(s.KVHeads)*hd
	x, n := uint64(s.ExpertFFN), uint64(s.Experts)
	wIn := 1.0 / math.Sqrt(float64(e))
	qGain := math.Sqrt(attnStd)
	w := func(name string, layer int, ne0, ne1 uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{ne0, ne1}, layer: layer, scale: scale}
	}
	vec := func(name string, layer int, n uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{n}, layer: layer, scale: scale}
	}
	norm := func(name string, layer int) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{e}, layer: layer, kind: kindNorm, scale: normWeightStd}
	}
	out := []tensorSpec{w("token_embd.weight", -1, e, nVocab, gain(logitStd, e))}
	for i := range s.Layers {
		b := "blk." + strconv.Itoa(i) + "."
		down := ffnGain
		if i == 0 {
			down = ffnGainFirst
		}
		out = append(out,
			norm(b+"attn_norm.weight", i),
			w(b+"attn_q.weight", i, e, nq, qGain*wIn), vec(b+"attn_q.bias", i, nq, biasStd),
			w(b+"attn_k.weight", i, e, nkv, qGain*wIn), vec(b+"attn_k.bias", i, nkv, biasStd),
			w(b+"attn_v.weight", i, e, nkv, wIn), vec(b+"attn_v.bias", i, nkv, biasStd),
			w(b+"attn_output.weight", i, nq, e, gain(attnOutGain, nq)), vec(b+"attn_output.bias", i, e, 0.02),
			vec(b+"attn_sinks.weight", i, uint64(s.Heads), 1),
			norm(b+"post_attention_norm.weight", i),
			w(b+"ffn_gate_inp.weight", i, e, n, routerStd*wIn), vec(b+"ffn_gate_inp.bias", i, n, biasStd),
			tensorSpec{name: b + "ffn_gate_exps.weight", dims: []uint64{e, x, n}, layer: i, scale: wIn},
			w(b+"ffn_gate_exps.bias", i, x, n, biasStd),
			tensorSpec{name: b + "ffn_up_exps.weight", dims: []uint64{e, x, n}, layer: i, scale: wIn},
			w(b+"ffn_up_exps.bias", i, x, n, biasStd),
			tensorSpec{name: b + "ffn_down_exps.weight", dims: []uint64{x, e, n}, layer: i, scale: gain(down, x)},
			w(b+"ffn_down_exps.bias", i, e, n, 0.02))
	}
	out = append(out, tensorSpec{name: "output_norm.weight", dims: []uint64{e}, layer: -1, kind: kindSignedNorm, scale: normWeightStd})
	return append(out, w("output.weight", -1, e, nVocab, logitStd*wIn))
}

// lfm2Specs lists an LFM2 model's tensors (llama.cpp's src/models/lfm2.cpp)
// in llamaref's order and with its scales: per block the operator norm,
// then attention (Q, K, V, the Q/K norms, the output) or the short
// convolution (its kernel N(0, 1/ShortConv), in_proj to B, C and x, and
// out_proj with the attention output's gain), then the FFN: dense, or for
// lfm2moe's later blocks the router and experts as Qwen3-MoE's followed by
// the selection bias (N(0, 0.25²), about the spread of the sigmoid
// gates' differences, so that it changes some choices); the output norm
// is token_embd_norm. llamaref scales Q, K, V, the FFN's inputs and
// out_proj by products with 1/√Embd, not quotients, and so does this.
func (m Model) lfm2Specs(nVocab uint64) []tensorSpec {
	s := m.Shape
	e, f := uint64(s.Embd), uint64(s.FFN)
	hd := uint64(s.headDim())
	nq, nkv := uint64(s.Heads)*hd, uint64(s.KVHeads)*hd
	wIn := 1.0 / math.Sqrt(float64(e))
	qGain := math.Sqrt(attnStd)
	qk := qkNormScale(int(hd))
	w := func(name string, layer int, ne0, ne1 uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{ne0, ne1}, layer: layer, scale: scale}
	}
	vec := func(name string, layer int, n uint64, k kind, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{n}, layer: layer, kind: k, scale: scale}
	}
	norm := func(name string, layer int) tensorSpec { return vec(name, layer, e, kindNorm, normWeightStd) }
	out := []tensorSpec{w("token_embd.weight", -1, e, nVocab, gain(logitStd, e))}
	for i := range s.Layers {
		b := "blk." + strconv.Itoa(i) + "."
		down := ffnGain
		if i == 0 {
			down = ffnGainFirst
		}
		out = append(out, norm(b+"attn_norm.weight", i))
		if s.isAttn(i) {
			out = append(out,
				w(b+"attn_q.weight", i, e, nq, qGain*wIn),
				w(b+"attn_k.weight", i, e, nkv, qGain*wIn),
				w(b+"attn_v.weight", i, e, nkv, wIn),
				vec(b+"attn_q_norm.weight", i, hd, kindAroundScale, qk),
				vec(b+"attn_k_norm.weight", i, hd, kindAroundScale, qk),
				w(b+"attn_output.weight", i, nq, e, gain(attnOutGain, nq)))
		} else {
			out = append(out,
				w(b+"shortconv.conv.weight", i, uint64(s.ShortConv), e, gain(1, uint64(s.ShortConv))),
				w(b+"shortconv.in_proj.weight", i, e, 3*e, wIn),
				w(b+"shortconv.out_proj.weight", i, e, e, attnOutGain*wIn))
		}
		out = append(out, norm(b+"ffn_norm.weight", i))
		if s.Arch == ArchLFM2MoE && i >= s.DenseLead {
			out = append(out, m.experts(b, i, down)...)
			out = append(out, vec(b+"exp_probs_b.bias", i, uint64(s.Experts), kindGauss, selectionBiasStd))
			continue
		}
		out = append(out,
			w(b+"ffn_gate.weight", i, e, f, wIn),
			w(b+"ffn_up.weight", i, e, f, wIn),
			w(b+"ffn_down.weight", i, f, e, gain(down, f)))
	}
	out = append(out, vec("token_embd_norm.weight", -1, e, kindSignedNorm, normWeightStd))
	if s.Untied {
		out = append(out, w("output.weight", -1, e, nVocab, logitStd*wIn))
	}
	return out
}

// bertSpecs lists a BERT encoder's tensors (llama.cpp's src/models/bert.cpp):
// embeddings of tokens, token types and positions summed and LayerNormed,
// then post-LayerNorm blocks with biases everywhere and a GELU FFN (no gate).
// The scales are llamaref's for its encoder: embeddings of std 0.5 (tokens),
// 0.1 (types) and 0.3 (positions), biases of 0.02, attention as the
// decoders, and an FFN down gain of 0.5.
func (m Model) bertSpecs(nVocab uint64) []tensorSpec {
	s := m.Shape
	e, f := uint64(s.Embd), uint64(s.FFN)
	const (
		tokenStd, typeStd, posStd = 0.5, 0.1, 0.3
		bertBiasStd               = 0.02
		downGain                  = 0.5
	)
	qGain := math.Sqrt(attnStd)
	w := func(name string, layer int, ne0, ne1 uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{ne0, ne1}, layer: layer, scale: scale}
	}
	bias := func(name string, layer int, n uint64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{n}, layer: layer, scale: bertBiasStd}
	}
	layerNorm := func(name string, layer int) []tensorSpec {
		return []tensorSpec{
			{name: name + ".weight", dims: []uint64{e}, layer: layer, kind: kindNorm, scale: normWeightStd},
			bias(name+".bias", layer, e),
		}
	}
	out := []tensorSpec{
		w("token_embd.weight", -1, e, nVocab, tokenStd),
		w("token_types.weight", -1, e, bertTokenTypes, typeStd),
		w("position_embd.weight", -1, e, uint64(s.Context), posStd),
	}
	out = append(out, layerNorm("token_embd_norm", -1)...)
	for i := range s.Layers {
		b := "blk." + strconv.Itoa(i) + "."
		for _, p := range []struct {
			name  string
			scale float64
		}{{"attn_q", gain(qGain, e)}, {"attn_k", gain(qGain, e)}, {"attn_v", gain(1, e)}, {"attn_output", gain(attnOutGain, e)}} {
			out = append(out, w(b+p.name+".weight", i, e, e, p.scale), bias(b+p.name+".bias", i, e))
		}
		out = append(out, layerNorm(b+"attn_output_norm", i)...)
		out = append(out,
			w(b+"ffn_up.weight", i, e, f, gain(1, e)), bias(b+"ffn_up.bias", i, f),
			w(b+"ffn_down.weight", i, f, e, gain(downGain, f)), bias(b+"ffn_down.bias", i, e))
		out = append(out, layerNorm(b+"layer_output_norm", i)...)
	}
	if s.Pooling == "rank" {
		// The classifier head on the pooled vector: a hidden × hidden
		// layer, then one score. cls.output.weight is [hidden, 1], which
		// GGUF stores as a vector (ggml drops trailing 1s), so it is
		// never quantized.
		out = append(out,
			w("cls.weight", -1, e, e, gain(1, e)), bias("cls.bias", -1, e),
			tensorSpec{name: "cls.output.weight", dims: []uint64{e}, layer: -1, scale: gain(1, e)},
			bias("cls.output.bias", -1, 1))
	}
	return out
}

// gain is the scale g/sqrt(n), computed exactly as llamaref does: a
// division, not a multiplication by 1/sqrt(n), which can round differently.
func gain(g float64, n uint64) float64 { return g / math.Sqrt(float64(n)) }

// qkNormScale is the level of the Q/K norm weights, (attnStd/headDim)^¼:
// RMS-normalized heads have q·k/sqrt(d) of about sqrt(d), and weights w on
// both q and k scale that by w², so this keeps the raw scores at std
// sqrt(attnStd), as in the other families.
//
// llamaref computes pow(2, 0.25) / pow(d, 0.25) with the C library's pow,
// which is correctly rounded for these inputs; Go's math.Pow is not (it is
// one unit in the last place off for 183 of the even head sizes up to 1024,
// 4 among them). The fourth roots here are rounded once from 256-bit ones,
// which reproduces glibc's quotient for every head size up to 716.
func qkNormScale(headDim int) float64 {
	return root4(attnStd) / root4(float64(headDim))
}

// root4 is x^¼ rounded to nearest.
func root4(x float64) float64 {
	b := new(big.Float).SetPrec(256).SetFloat64(x)
	b.Sqrt(b).Sqrt(b)
	r, _ := b.Float64()
	return r
}

// llama3RopeFactors are the rope_freqs.weight values of Llama 3.1/3.2's
// "llama3" rope scaling, as llama.cpp's converter computes them: for each
// rotated pair i of a head of headDim, the frequency base^(-2i/headDim) has
// wavelength 2π/freq; short wavelengths keep factor 1, long ones get
// r.Factor, and those between get 1/((1-t)/Factor + t) with t the smooth
// interpolation weight. llama.cpp divides each pair's frequency by its
// factor. Computed in float64 and rounded once (the converter's float32
// torch arithmetic may differ in the last bit).
func llama3RopeFactors(r Llama3Rope, base float64, headDim int) []float32 {
	orig := float64(r.OrigContext)
	lowWavelen, highWavelen := orig/r.LowFreqFactor, orig/r.HighFreqFactor
	out := make([]float32, headDim/2)
	for i := range out {
		freq := 1 / math.Pow(base, float64(2*i)/float64(headDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(r.Factor)
		default:
			t := (orig/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = float32(1 / ((1-t)/r.Factor + t))
		}
	}
	return out
}

// quantizeOrder sorts specs the way llama.cpp's quantizer writes tensors:
// those outside blocks first, then block by block, each sorted by name.
func quantizeOrder(specs []tensorSpec) {
	slices.SortStableFunc(specs, func(a, b tensorSpec) int {
		return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.name, b.name))
	})
}
