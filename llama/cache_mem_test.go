package llama

import (
	"context"
	"testing"
)

// TestSequenceMemory holds SequenceMemory to what a real cache holds: for
// a hybrid of each recurrent kind and a model with a sliding-window
// layer, in every cache type, a cache that has run 300 tokens (so holds
// memory for 512 positions) reports in Bytes the KV and State that
// SequenceMemory gives for 512, and each checkpoint it takes adds one
// State, up to the Checkpoints it allows.
func TestSequenceMemory(t *testing.T) {
	models := []struct {
		name string
		open func(t *testing.T) *CPU
	}{
		{"lfm2", func(t *testing.T) *CPU { return openLFM2(t, "lfm2-tiny-F32", Options{Threads: 2}) }},
		{"granitehybrid", func(t *testing.T) *CPU { return openGraniteHybrid(t, "granitehybrid-tiny-F32", Options{Threads: 2}) }},
		{"gemma3 window", func(t *testing.T) *CPU { return openWindowed(t, 64) }},
	}
	for _, mdl := range models {
		t.Run(mdl.name, func(t *testing.T) {
			m := mdl.open(t)
			tokens := make([]int32, 300)
			for i := range tokens {
				tokens[i] = int32(i*7) % int32(m.Config.Vocab)
			}
			for _, typ := range []KVType{KVF16, KVF32, KVQ8_0} {
				opts := CacheOptions{KVType: typ, Context: 1024, Checkpoints: 2}
				c := newCache(t, m, opts)
				if _, err := m.Forward(context.Background(), c, tokens, 0, false); err != nil {
					t.Fatal(err)
				}
				opts.BatchSize = m.batch
				want := m.Arch.SequenceMemory(m.Config, opts, c.Cap())
				if got := c.Bytes(); got != want.KV+want.State {
					t.Fatalf("%v: after %d tokens (memory for %d) the cache holds %d bytes, SequenceMemory says KV %d + State %d", typ, len(tokens), c.Cap(), got, want.KV, want.State)
				}
				recurrent := want.State > 0
				if recurrent != (mdl.name != "gemma3 window") || want.Checkpoints != 2*want.State {
					t.Fatalf("%v: State %d, Checkpoints %d: want a state for the hybrids only, and two copies of it", typ, want.State, want.Checkpoints)
				}
				if !recurrent {
					continue
				}
				for range 3 { // the third pushes out the first
					if _, err := m.Forward(context.Background(), c, tokens[:5], c.Len(), false); err != nil {
						t.Fatal(err)
					}
					if err := c.Checkpoint(); err != nil {
						t.Fatal(err)
					}
				}
				if got := c.Bytes(); got != want.Total() {
					t.Fatalf("%v: with its checkpoints the cache holds %d bytes, SequenceMemory's total is %d", typ, got, want.Total())
				}
			}
		})
	}
}
