package bert_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/models/bert" // registers the architecture with engine.Open
)

// Semantic search in a few lines: embed the documents and the query with an
// embedding model (bge-small-en-v1.5 in F16 here; any BERT GGUF works) and
// rank the documents by their dot product with the query, which for
// normalized vectors is the cosine similarity. bge's English models want the
// query prefixed with an instruction; the documents go as they are.
func Example() {
	m, err := engine.Open("bge-small-en-v1.5-f16.gguf", engine.WithThreads(4))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	docs := []string{"The cat sat on the mat.", "Stock markets fell sharply today.", "Kittens love to nap in the sun."}
	d, err := m.Embed(ctx, docs, engine.EmbedOptions{Normalize: true})
	if err != nil {
		log.Fatal(err)
	}
	q, err := m.Embed(ctx, []string{"Represent this sentence for searching relevant passages: sleepy cats"}, engine.EmbedOptions{Normalize: true})
	if err != nil {
		log.Fatal(err)
	}
	for i, v := range d.Vectors {
		var cos float32
		for j := range v {
			cos += v[j] * q.Vectors[0][j]
		}
		fmt.Printf("%.3f %s\n", cos, docs[i])
	}
}
