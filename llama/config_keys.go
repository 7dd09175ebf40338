package llama

import (
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/gguf"
)

// MoEFromGGUF reads a mixture of experts from a file's `<arch>.expert_*`
// keys: expert_count and expert_used_count (required once expert_count is
// there), expert_feed_forward_length (default feed_forward_length /
// expert_used_count, as llama.cpp's qwen3moe loader), expert_weights_scale,
// expert_weights_norm, expert_gating_func (1 softmax, 2 sigmoid, 3 softmax
// over the chosen; default SoftmaxTopK) and
// expert_shared_feed_forward_length. It returns nil for a dense file (no
// expert_count, or 0). The family sets what its files do not say (the
// activation, biases, NormWeights where its loader hard-codes it). Every
// count is checked here, with an error naming the key, before anything is
// allocated for it.
func MoEFromGGUF(f *gguf.File, cfg Config) (*MoE, error) {
	key := func(k string) string { return cfg.Arch + "." + k }
	n, err := optUint(f, key("expert_count"), 0)
	if err != nil || n == 0 {
		return nil, err
	}
	e := &MoE{Experts: n}
	if e.Experts > MaxExperts {
		return nil, fmt.Errorf("llama: %s = %d: at most %d experts", key("expert_count"), n, MaxExperts)
	}
	if e.Used, err = uint32OrUniformKey(f, key("expert_used_count"), cfg.Layers); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if e.Used < 1 || e.Used > e.Experts {
		return nil, fmt.Errorf("llama: %s = %d: want 1 to %s (%d)", key("expert_used_count"), e.Used, key("expert_count"), e.Experts)
	}
	def := 0
	if cfg.FFN > 0 {
		def = cfg.FFN / e.Used
	}
	if e.Width, err = optUint(f, key("expert_feed_forward_length"), def); err != nil {
		return nil, err
	}
	if e.Width < 1 || e.Width > 1<<24 {
		return nil, fmt.Errorf("llama: %s = %d is out of range (or missing, with no feed_forward_length to derive it from)", key("expert_feed_forward_length"), e.Width)
	}
	if e.SharedWidth, err = optUint(f, key("expert_shared_feed_forward_length"), 0); err != nil {
		return nil, err
	}
	if e.SharedWidth > 1<<24 {
		return nil, fmt.Errorf("llama: %s = %d is out of range", key("expert_shared_feed_forward_length"), e.SharedWidth)
	}
	if _, ok := f.Get(key("expert_weights_scale")); ok {
		if e.WeightScale, err = f.Float32(key("expert_weights_scale")); err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
		if err := finite(cfg.Arch, key("expert_weights_scale"), e.WeightScale); err != nil {
			return nil, err
		}
	}
	if _, ok := f.Get(key("expert_weights_norm")); ok {
		if e.NormWeights, err = f.Bool(key("expert_weights_norm")); err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
	}
	g, err := optUint(f, key("expert_gating_func"), 1)
	if err != nil {
		return nil, err
	}
	switch g {
	case 1:
		e.Gating = SoftmaxTopK
	case 2:
		e.Gating = SigmoidTopK
	case 3:
		e.Gating = TopKSoftmax
	default:
		return nil, fmt.Errorf("llama: %s = %d: want 1 (softmax), 2 (sigmoid) or 3 (softmax of the chosen)", key("expert_gating_func"), g)
	}
	return e, nil
}

// optUint reads an optional unsigned key of at most 2^24, def when absent.
func optUint(f *gguf.File, key string, def int) (int, error) {
	if _, ok := f.Get(key); !ok {
		return def, nil
	}
	v, err := f.Uint32(key)
	if err != nil {
		return 0, fmt.Errorf("llama: %w", err)
	}
	if v > 1<<24 {
		return 0, fmt.Errorf("llama: %s = %d is out of range", key, v)
	}
	return int(v), nil
}

// uint32OrUniformKey is uint32OrUniform as an int, with the missing-key
// error naming the key.
func uint32OrUniformKey(f *gguf.File, key string, layers int) (int, error) {
	v, err := uint32OrUniform(f, key, layers)
	if errors.Is(err, gguf.ErrKeyNotFound) {
		return 0, fmt.Errorf("%s is missing", key)
	}
	return int(v), err
}

// SlidingLayers reads which of a model's layers use the sliding window from
// key (<arch>.attention.sliding_window_pattern), as llama.cpp's
// load_swa_pattern does: one flag per layer, or a period n where layer i is
// local unless i%n == n-1 (0: every layer local), period when the key is
// absent.
func SlidingLayers(f *gguf.File, key string, layers, period int) ([]bool, error) {
	local := make([]bool, layers)
	v, ok := f.Get(key)
	if flags, isArr := v.([]bool); ok && isArr {
		if len(flags) != layers {
			return nil, fmt.Errorf("%s has %d flags for %d layers", key, len(flags), layers)
		}
		copy(local, flags)
		return local, nil
	}
	if ok {
		p, err := f.Uint32(key)
		if err != nil {
			return nil, err
		}
		period = int(p)
	}
	for i := range local {
		local[i] = period == 0 || i%period < period-1
	}
	return local, nil
}
