package llama

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/rope"
)

// openModelFile opens the GGUF file at path as a SmolLM3-style model (NoPE
// in every fourth layer) with the given threads; both close with the test.
func openModelFile(t testing.TB, path string, threads int) *CPU {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newNoPE(f, Options{Threads: threads}, rope.EveryNth(cfg.Layers, 4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestLongContext3B decodes one token at position 65,535 of a 3B-shaped
// Q4_K_M model over a full q8_0 cache and reads the process's peak memory:
// the 64K-token context fits a 24 GB machine with room to spare. The
// cache's 65,535 earlier positions are filled with a synthetic pattern
// (prefilling them would take hours on a CPU); the decode step reads all of
// them. It needs a model file of that shape and is heavy:
//
//	SMOLGO_HEAVY=1 SMOLGO_3B=/path/SmolLM3-3B-Q4_K_M.gguf go test -run LongContext3B -v ./llama/
func TestLongContext3B(t *testing.T) {
	path := os.Getenv("SMOLGO_3B")
	if os.Getenv("SMOLGO_HEAVY") != "1" || path == "" {
		t.Skip("set SMOLGO_HEAVY=1 and SMOLGO_3B to a 3B-shaped GGUF")
	}
	m := openModelFile(t, path, 2)
	cfg := m.Config
	const ctxLen = 65536
	c, err := m.NewCache(CacheOptions{KVType: KVQ8_0, Context: ctxLen})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxLen() != ctxLen {
		t.Fatalf("cache length %d (model context %d)", c.MaxLen(), cfg.Context)
	}
	c.reserve(ctxLen)
	// A pattern of 4,096 positions: scale 1/64, pseudo-random quants.
	pat := make([]byte, 4096*c.kv[0].(*q8KV).row)
	x := uint32(1)
	for i := range pat {
		if i%q8Bytes == 0 {
			pat[i], pat[i+1] = 0x00, 0x24 // f16 1/64
		} else if i%q8Bytes > 1 {
			x = x*1664525 + 1013904223
			pat[i] = byte(x >> 24)
		}
	}
	for l := range cfg.Layers {
		st := c.kv[l].(*q8KV)
		for off := 0; off < len(st.k); off += len(pat) {
			copy(st.k[off:], pat)
			copy(st.v[off:], pat)
		}
	}
	c.n = ctxLen - 1
	start := time.Now()
	logits, err := m.Forward(context.Background(), c, []int32{42}, ctxLen-1, false)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
	}
	peak := procStatusBytes(t, "VmHWM")
	t.Logf("3B %s, q8_0 cache of %d positions: %d bytes (%.2f GB); decode at position %d took %v; peak RSS %.2f GB",
		cfg.Arch, c.Len(), c.Bytes(), float64(c.Bytes())/1e9, ctxLen-1, took.Round(time.Millisecond), float64(peak)/1e9)
	if c.Bytes() != cfg.KVBytes(KVQ8_0, ctxLen) {
		t.Errorf("cache holds %d bytes, KVBytes says %d", c.Bytes(), cfg.KVBytes(KVQ8_0, ctxLen))
	}
	if peak > 24e9 {
		t.Errorf("peak RSS %d bytes: more than the 24 GB machine", peak)
	}
}

// procStatusBytes reads a "kB" line of /proc/self/status.
func procStatusBytes(t *testing.T, key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("%s not in /proc/self/status", key)
	return 0
}
