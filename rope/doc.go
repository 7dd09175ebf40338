// Package rope implements rotary position embeddings (RoPE) the way
// llama.cpp's CPU backend computes them, so that a model run here rotates
// queries and keys to the same float32 bits.
//
// A Config describes one head's rotation: how many dimensions rotate
// (rope.dimension_count), the frequency base (rope.freq_base), the pairing
// Layout (Norm = adjacent pairs, what GGUF llama and smollm3 files need;
// NeoX = halves) and an optional context-extension Scaling (Linear or YaRN).
// For every position, Angles computes the cos and sin of each pair, then
// Rotate turns a head in place:
//
//	cfg := rope.Config{Dims: 64, Base: 10000}
//	cos, sin := make([]float32, 32), make([]float32, 32)
//	cfg.Angles(pos, cos, sin)
//	for h := range heads {
//		cfg.Rotate(q[h*64:(h+1)*64], cos, sin)
//	}
//
// The angle of pair i is built like ggml's rope cache: theta starts at the
// position and is multiplied by base^(-2/Dims) once per pair as a running
// float32 product (not a fresh power per pair). YaRN (static, applied at every
// position) blends the interpolated angle theta/Factor with theta through a
// ramp over the pair range CorrDims and multiplies cos and sin by
// 1 + 0.1·ln(Factor).
//
// M-RoPE (Config.Sections, Interleaved) gives each rotated pair one of four
// position components; for text, which is all this package is given
// positions for, the first three are the token's position and the fourth
// 0, so pairs of the fourth never turn and the others turn as plain RoPE's
// (Qwen3.5's interleaved sections [11 11 10 0] cover its 32 pairs with the
// first three: its text rotation is plain NeoX RoPE).
//
// NoPE is a per-layer mask of layers that skip RoPE altogether; SmolLM3
// skips it in every fourth layer (EveryNth(layers, 4)).
package rope
