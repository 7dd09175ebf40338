package llama

// Memory of a KV cache. Every layer keeps, for every position, KVDim keys
// and KVDim values (KVHeads × HeadDim each), so a cache of n positions takes
//
//	2 × Layers × n × bytes(KVDim values of the cache's type)
//
// For SmolLM3-3B (36 layers, 4 KV heads × 128 = 512 values) that is, per
// token: 147,456 bytes in f32, 73,728 in f16 and 39,168 in q8_0 (512 values
// are 16 blocks of 34 bytes). A 65,536-token context therefore needs 4.5 GiB
// of f16 cache or 2.4 GiB of q8_0 cache, next to the 1.9 GB of Q4_K_M
// weights: either fits a 24 GB machine, q8_0 with room for several such
// sequences (TestKVMemory3B checks the arithmetic; TestLongContext3B, with
// SMOLGO_HEAVY=1, decodes at position 65,535 of a 3B Q4_K_M model over a full
// q8_0 cache in a process that peaks at 4.5 GB).

// KVBytes returns the memory a cache of type t takes for the given number of
// positions: keys and values of every layer (KVType.Bytes of each). It
// counts every layer as attention, so for a hybrid model (LFM2, Qwen3.5,
// Granite 4.0-H), whose recurrent layers keep a fixed state instead, it is
// an upper bound; Arch.SequenceMemory counts by layer, and Cache.Bytes
// tells what a cache holds.
func (c *Config) KVBytes(t KVType, positions int) int64 {
	return 2 * int64(c.Layers) * int64(positions) * t.Bytes(c.KVDim())
}

// Bytes returns the memory the cache's keys and values hold now: its
// allocated positions (which grow by doubling up to MaxLen, so at most twice
// Len, and never more than MaxLen; a sliding-window layer's at most its
// ring) times the bytes of a position's keys and values.
func (c *Cache) Bytes() int64 {
	var n int64
	for _, s := range c.kv {
		n += s.bytes()
	}
	return n + c.StateBytes()
}

// Cap is the number of positions the cache has memory for now.
func (c *Cache) Cap() int { return c.capLen }

// SequenceMemory is the memory one sequence's cache takes at a length, by
// what holds it. A model of attention layers has only KV, which grows with
// the length; a hybrid's recurrent layers (short convolutions, Mamba-2,
// Gated DeltaNet) keep State instead, the same at every length, plus the
// copies of it the cache keeps as checkpoints (see state.go).
type SequenceMemory struct {
	KV          int64 // keys and values of the attention layers
	State       int64 // the recurrent layers' live state
	Checkpoints int64 // the checkpoints' copies of State, once all the cache may keep are taken
}

// Total is the sum of the three.
func (s SequenceMemory) Total() int64 { return s.KV + s.State + s.Checkpoints }

// SequenceMemory returns what a cache made with opts for a model of this
// architecture holds once it holds positions positions, without making
// one: KV and State are what Cache.Bytes reports for a cache allocated
// to exactly that length before it takes a checkpoint (the cache grows
// by doubling, so a live one may hold up to twice the KV), and
// Checkpoints is its most besides. A sliding-window layer counts its ring
// (window + batch positions) at most; opts.BatchSize 0 is
// DefaultBatchSize, and Context 0 is cfg.Context, as for CPU.NewCache.
//
// It is how ggufinfo and the docs compare a hybrid's memory at long
// context with a dense model's; llama.cpp reports the same sums when it
// makes a context ("llama_kv_cache: size", "llama_memory_recurrent: size").
func (a *Arch) SequenceMemory(cfg Config, opts CacheOptions, positions int) SequenceMemory {
	maxLen := opts.Context
	if maxLen == 0 {
		maxLen = cfg.Context
	}
	batch := opts.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	cps := opts.Checkpoints
	if cps == 0 {
		cps = DefaultCheckpoints
	}
	positions = max(0, min(positions, maxLen))
	var m SequenceMemory
	for _, l := range a.Layers {
		if l.Attention() != nil {
			n := positions
			if w := l.window(); w > 0 && w+batch < maxLen {
				n = min(n, w+batch)
			}
			m.KV += 2 * int64(n) * opts.KVType.Bytes(cfg.KVDim())
		}
		if s, ok := l.Mixer.(stateful); ok {
			m.State += 4 * int64(s.stateSize(cfg))
		}
	}
	m.Checkpoints = m.State * int64(max(cps, 0))
	return m
}
