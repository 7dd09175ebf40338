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
// an upper bound; Cache.Bytes tells what a cache holds.
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
