package engine_test

import (
	"context"
	"fmt"
	"log"
	"sort"

	"github.com/smolgo/smolgo/engine"
)

// An embedding model is an Encoder (or a Backend that returns hidden
// states): Embed tokenizes the texts with the model's format, batches them
// into passes and pools one vector each. With Normalize, a dot product of
// two vectors is their cosine similarity, which is all semantic search
// needs. A real program opens a file instead (engine.Open("bge-small.gguf")
// with package bert or models imported); this toy encoder embeds a text as
// the counts of its letters, so that the example runs anywhere.
func Example_embeddings() {
	cfg, _ := engine.NewConfig()
	m, err := engine.NewEncoder(letterEncoder{}, echoFormat{}, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	docs := []string{"a quick brown fox", "lazy dogs sleep", "zebras and foxes"}
	d, err := m.Embed(ctx, docs, engine.EmbedOptions{Normalize: true})
	if err != nil {
		log.Fatal(err)
	}
	q, err := m.Embed(ctx, []string{"fox"}, engine.EmbedOptions{Normalize: true})
	if err != nil {
		log.Fatal(err)
	}
	score := make([]float32, len(docs))
	for i, v := range d.Vectors {
		for j := range v {
			score[i] += v[j] * q.Vectors[0][j]
		}
	}
	order := []int{0, 1, 2}
	sort.Slice(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	for _, i := range order {
		fmt.Printf("%.3f %s\n", score[i], docs[i])
	}
	fmt.Println(d.Tokens, "tokens embedded")
	// Output:
	// 0.577 a quick brown fox
	// 0.387 zebras and foxes
	// 0.132 lazy dogs sleep
	// 48 tokens embedded
}

// letterEncoder is a toy Encoder: an embedding counts the letters a-z of
// its sequence's bytes (mean pooling divides by the length).
type letterEncoder struct{}

func (letterEncoder) Vocab() int              { return vocab }
func (letterEncoder) Dim() int                { return 26 }
func (letterEncoder) Labels() int             { return 0 }
func (letterEncoder) Pooling() engine.Pooling { return engine.PoolMean }
func (letterEncoder) BatchSize() int          { return 512 }
func (letterEncoder) MaxTokens() int          { return 512 }

func (letterEncoder) Encode(_ context.Context, batch []engine.EncodeSeq) error {
	for _, s := range batch {
		clear(s.Out)
		for _, t := range s.Tokens {
			if t >= 'a' && t <= 'z' {
				s.Out[t-'a'] += 1 / float32(len(s.Tokens))
			}
		}
	}
	return nil
}
