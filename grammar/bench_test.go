package grammar

import (
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tokenizer"
)

// personSchema and personDoc are a typical structured-output request and
// answer.
const (
	personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"},
	  "tags":{"type":"array","items":{"type":"string"}},
	  "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":["string","null"]}},"required":["city"]}},
	 "required":["name","age"]}`
	personDoc = `{"name": "Ada Lovelace", "age": 36, "email": "ada@example.com", "tags": ["mathematics", "poetry", "analytical engines"], "address": {"city": "London", "zip": null}}`
)

// BenchmarkMask measures the per-token cost of constrained decoding on
// SmolLM3's 128,256-token vocabulary (compare with a decode step of the 3B
// model on CPU, about 60 ms):
//
//   - document: Allow + Accept for every token of a typical answer, on a
//     fresh Constraint each time (cold caches: every state met for the
//     first time); ns/token is the average.
//   - string-uncached: one mask inside a JSON string, the worst case (about
//     123K tokens allowed, the whole trie walked), with the automaton's
//     transitions memoized but the mask cache emptied every time.
//   - cached: a mask for a state already seen (the usual case inside a
//     string, where every content token returns to the same state).
//   - apply: Apply in such a state: the mask and its -Inf written into the
//     logits.
func BenchmarkMask(b *testing.B) {
	v, tok := realVocab(b)
	g, err := FromJSONSchema([]byte(personSchema))
	if err != nil {
		b.Fatal(err)
	}
	ids := tok.Encode(personDoc, false)
	mask := make([]bool, v.Len())
	b.Run("document", func(b *testing.B) {
		for b.Loop() {
			c := g.NewConstraint(v)
			for _, id := range ids {
				c.Allow(mask)
				if !mask[id] {
					b.Fatalf("token %d not allowed", id)
				}
				if err := c.Accept(id); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		b.ReportMetric(0, "ns/op")
	})
	// document-limited: the same under an ample Limit, which makes each
	// new state's mask also compute the tokens left after every token.
	b.Run("document-limited", func(b *testing.B) {
		for b.Loop() {
			c := g.NewConstraint(v)
			for _, id := range ids {
				c.Limit(1000)
				c.Allow(mask)
				if !mask[id] {
					b.Fatalf("token %d not allowed", id)
				}
				if err := c.Accept(id); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		b.ReportMetric(0, "ns/op")
	})
	inString := func() *Constraint {
		c := g.NewConstraint(v)
		for _, id := range tok.Encode(`{"name": "Ada`, false) {
			if err := c.Accept(id); err != nil {
				b.Fatal(err)
			}
		}
		return c
	}
	b.Run("string-uncached", func(b *testing.B) {
		c := inString()
		c.Allow(mask)
		for b.Loop() {
			clear(c.cache)
			c.order = c.order[:0]
			c.Allow(mask)
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := inString()
		c.Allow(mask)
		for b.Loop() {
			c.Allow(mask)
		}
	})
	// apply: Apply on a cached state, the mask written into the logits as
	// -Inf (what a generation loop pays per token on top of Allow).
	b.Run("apply", func(b *testing.B) {
		c := inString()
		logits := make([]float32, v.Len())
		c.Apply(logits)
		for b.Loop() {
			c.Apply(logits)
		}
	})
}

// BenchmarkMaskVocabs is the mask's cost on each family's vocabulary
// size: SmolLM3's 128,256 tokens, Qwen2's 151,936 and Gemma's 262,144
// (llama.cpp's ggml-vocab-qwen2.gguf and ggml-vocab-gemma-4.gguf, the
// same size as Gemma 3's). string-uncached is the worst new state (inside
// a JSON string: almost every token allowed, the whole trie walked);
// cached is a state seen before, the usual case.
func BenchmarkMaskVocabs(b *testing.B) {
	g, err := FromJSONSchema([]byte(personSchema))
	if err != nil {
		b.Fatal(err)
	}
	vocabs := []struct {
		name string
		load func() (*Vocab, *tokenizer.Tokenizer)
	}{
		{"smollm3-128256", func() (*Vocab, *tokenizer.Tokenizer) { return realVocab(b) }},
		{"qwen2-151936", func() (*Vocab, *tokenizer.Tokenizer) {
			return loadVocab(b, filepath.Join(sharedtest.LlamaCpp(b), "models", "ggml-vocab-qwen2.gguf"))
		}},
		{"gemma-262144", func() (*Vocab, *tokenizer.Tokenizer) {
			return loadVocab(b, filepath.Join(sharedtest.LlamaCpp(b), "models", "ggml-vocab-gemma-4.gguf"))
		}},
	}
	for _, vc := range vocabs {
		b.Run(vc.name, func(b *testing.B) {
			v, tok := vc.load()
			mask := make([]bool, v.Len())
			c := g.NewConstraint(v)
			for _, id := range tok.Encode(`{"name": "Ada`, false) {
				if err := c.Accept(id); err != nil {
					b.Fatal(err)
				}
			}
			c.Allow(mask)
			b.Run("string-uncached", func(b *testing.B) {
				for b.Loop() {
					clear(c.cache)
					c.order = c.order[:0]
					c.Allow(mask)
				}
			})
			b.Run("cached", func(b *testing.B) {
				for b.Loop() {
					c.Allow(mask)
				}
			})
		})
	}
}

func loadVocab(b *testing.B, path string) (*Vocab, *tokenizer.Tokenizer) {
	tok, err := tokenizer.LoadGGUF(path)
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewVocab(TokenBytes(tok), tok.EndOfGeneration())
	if err != nil {
		b.Fatal(err)
	}
	return v, tok
}
