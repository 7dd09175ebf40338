package llama

import (
	"context"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/tensor"
)

// A multi-token-prediction (MTP) block is a decoder block stored after a
// model's own (Config.NextN; Qwen3.5's nextn_predict_layers, blk.<Layers>.*)
// that predicts one token further than the model, as llama.cpp's qwen35
// graph_mtp computes it. Its input at position p is token x_p together with
// the model's final hidden state h_{p-1} (after the output norm: what
// Seq.Hidden returns) at the position before:
//
//	e = RMSNorm(embedding(x_p), nextn.enorm)
//	h = RMSNorm(h_{p-1}, nextn.hnorm)
//	x = nextn.eh_proj · [e; h]
//	x = the block (Arch.NextN[0]: attention and feed-forward, with their norms)
//	h_p' = RMSNorm(x, nextn.shared_head_norm, or output_norm without it)
//	logits = output · h_p'
//
// The logits predict x_{p+1}, one token further than the model's own
// prediction from h_{p-1}. Fed back with its own h_p' and the token it
// predicts, the block drafts further, one token at a time (llama.cpp's
// draft-mtp). Its attention keeps its own keys and values per sequence: an
// MTP cache is an ordinary attention cache of one layer, which goes back to
// any length.

// mtpBackend is a model's MTP block as a backend.Backend: a one-layer CPU
// model whose input rows it makes from each Seq's tokens and Embeds, the
// model's hidden states (see NextN).
type mtpBackend struct {
	*cpuBackend // the block, its input rows given (Seq.Embeds), its output norm the head's
	embd        *tensor.Matrix
	ehProj      *tensor.Matrix
	enorm       []float32
	hnorm       []float32
	mm          tensor.Scratch
	cat, rows   []float32 // reused: [e; h] rows and the block's input rows
	seqs        []backend.Seq
}

// NextN implements backend.NextNer: the model's MTP block (Config.NextN
// must be 1, and the family must describe the block in Arch.NextN), with
// caches like the model's (type, length, batch). It reads the block's
// tensors from the file now and shares the model's token embedding and
// output projection (the runner's copies) and threads.
func (b *cpuBackend) NextN() (backend.Backend, error) {
	return newMTPBackend(b.m, b.kv)
}

func newMTPBackend(m *CPU, kv CacheOptions) (*mtpBackend, error) {
	cfg, arch := m.Config, m.Arch
	switch {
	case cfg.NextN == 0:
		return nil, fmt.Errorf("llama: %s: the file has no multi-token-prediction block (nextn_predict_layers)", arch.Name)
	case cfg.NextN != 1:
		return nil, fmt.Errorf("llama: %s: %d multi-token-prediction blocks; one is supported", arch.Name, cfg.NextN)
	case len(arch.NextN) != 1:
		return nil, fmt.Errorf("llama: %s: the family does not describe its multi-token-prediction block", arch.Name)
	}
	f, blk := m.w.File, cfg.Layers // the block's tensors are blk.<Layers>.*
	block := arch.NextN[0]
	hc := cfg
	hc.Layers, hc.NextN = 1, 0
	if cfg.LayerKVHeads != nil {
		hc.LayerKVHeads = []int{cfg.KVHeads}
	}
	ha := Arch{Name: arch.Name + " MTP", Layers: []Layer{block.clone()}}
	if err := ha.Validate(hc); err != nil {
		return nil, err
	}
	ld := loader{f: f, arch: ha.Name}
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", blk, s) }
	var lw LayerWeights
	lw.AttnNorm = ld.vector(n("attn_norm.weight"), cfg.Embd)
	block.Mixer.load(&ld, hc, blk, &lw)
	lw.FFNNorm = ld.vector(n(block.ffnNorm()+".weight"), cfg.Embd)
	block.FFN.load(&ld, hc, blk, &lw)
	if block.PostNorms {
		lw.PostAttnNorm = ld.vector(n("post_attention_norm.weight"), cfg.Embd)
		lw.PostFFNNorm = ld.vector(n("post_ffw_norm.weight"), cfg.Embd)
	}
	h := &mtpBackend{embd: m.embd}
	h.ehProj = ld.matrix(n("nextn.eh_proj.weight"), 2*cfg.Embd, cfg.Embd)
	h.enorm = ld.vector(n("nextn.enorm.weight"), cfg.Embd)
	h.hnorm = ld.vector(n("nextn.hnorm.weight"), cfg.Embd)
	headNorm := m.outNorm
	if _, ok := f.Tensor(n("nextn.shared_head_norm.weight")); ok {
		headNorm = ld.vector(n("nextn.shared_head_norm.weight"), cfg.Embd)
	}
	// Qwen3.5's converter writes neither; a file that has them would
	// draft with another embedding or head than the one this reads.
	ld.unused(ha.Name, n("nextn.embed_tokens.weight"), n("nextn.shared_head_head.weight"))
	if ld.err != nil {
		return nil, fmt.Errorf("llama: %w", ld.err)
	}
	w := &Weights{Config: hc, Arch: ha, File: f, Embd: m.w.Embd, Output: m.w.Output, OutNorm: headNorm, Layers: []LayerWeights{lw}}
	head, err := newCPU(w, Options{BatchSize: m.batch}, m)
	if err != nil {
		return nil, err
	}
	cb, err := newCPUBackend(head, kv)
	if err != nil {
		head.Close()
		return nil, err
	}
	h.cpuBackend = cb
	return h, nil
}

// Step implements backend.Backend. Each Seq's Embeds are required: the
// model's final hidden states (Seq.Hidden of the model's backend) at the
// positions before its tokens, len(Tokens) rows of Embd, from which with
// the tokens' embeddings the block's input rows are made. Logits are the
// head's predictions, Hidden the block's own final hidden states (its input
// for the next position of a draft).
func (h *mtpBackend) Step(ctx context.Context, batch []backend.Seq) error {
	E := h.m.Config.Embd
	V := h.m.Config.Vocab
	total := 0
	for i, s := range batch {
		if len(s.Embeds) != len(s.Tokens)*E || len(s.Tokens) == 0 {
			return fmt.Errorf("llama: MTP sequence %d: %d hidden values for %d tokens of %d (Embeds must hold the model's hidden state before each token)", i, len(s.Embeds), len(s.Tokens), E)
		}
		if s.Bidirectional || s.Pos != nil {
			return fmt.Errorf("llama: MTP sequence %d: rows attending both ways or at given positions", i)
		}
		for k, t := range s.Tokens {
			if t < 0 || int(t) >= V {
				return fmt.Errorf("llama: MTP sequence %d: token %d at index %d is outside the vocabulary [0, %d)", i, t, k, V)
			}
		}
		for k, v := range s.Embeds {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("llama: MTP sequence %d: hidden value %d is %v", i, k, v)
			}
		}
		total += len(s.Tokens)
	}
	h.cat = grow(h.cat, 2*E*total)
	h.rows = grow(h.rows, E*total)
	h.seqs = append(h.seqs[:0], batch...)
	at := 0
	for i := range h.seqs {
		s := &h.seqs[i]
		n := len(s.Tokens)
		cat := h.cat[2*E*at : 2*E*(at+n)]
		for t, tok := range s.Tokens {
			e, hd := cat[2*E*t:2*E*t+E], cat[2*E*t+E:2*E*(t+1)]
			if err := h.embd.Row(int(tok), e); err != nil {
				return fmt.Errorf("llama: MTP embedding: %w", err)
			}
			tensor.RMSNorm(e, e, h.enorm, h.m.Config.RMSEps)
			tensor.RMSNorm(hd, s.Embeds[E*t:E*(t+1)], h.hnorm, h.m.Config.RMSEps)
		}
		rows := h.rows[E*at : E*(at+n)]
		if err := h.ehProj.Mul(h.m.pool, &h.mm, rows, cat, n); err != nil {
			return fmt.Errorf("llama: MTP: %w", err)
		}
		s.Embeds = rows
		at += n
	}
	err := h.cpuBackend.Step(ctx, h.seqs)
	clear(h.seqs)
	return err
}

// Close frees the block's own interleaved copies; the threads, the
// embedding and the output projection are the model's, which go on.
func (h *mtpBackend) Close() error { return h.m.Close() }
