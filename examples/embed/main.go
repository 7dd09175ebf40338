// Command embed is semantic search over a folder of text files: it embeds
// every file with an embedding model (a BERT GGUF such as bge-small or
// all-MiniLM, or Qwen3-Embedding) and prints the files closest in meaning
// to a query, best first, with their cosine similarity.
//
// Usage:
//
//	embed -model bge-small-en-v1.5-f16.gguf -dir notes/ [-top 5] [-prefix TEXT] how do I reset my password
//
// Each file is one input, cut to the model's length (512 tokens for BERT)
// when longer. -prefix goes before the query only: bge's English models want
// "Represent this sentence for searching relevant passages: ".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/models" // BERT and the decoder families
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	model := fs.String("model", "", "embedding model (GGUF)")
	dir := fs.String("dir", ".", "folder of .txt and .md files to search")
	top := fs.Int("top", 5, "how many files to print")
	prefix := fs.String("prefix", "", "text put before the query")
	if err := fs.Parse(args); err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if *model == "" || query == "" {
		return errors.New("usage: embed -model FILE -dir FOLDER [-top N] QUERY")
	}
	m, err := engine.Open(*model)
	if err != nil {
		return err
	}
	defer m.Close()

	// Read the files: one input each.
	var names, texts []string
	for _, pat := range []string{"*.txt", "*.md"} {
		found, _ := filepath.Glob(filepath.Join(*dir, pat))
		for _, name := range found {
			b, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			if len(strings.TrimSpace(string(b))) > 0 {
				names, texts = append(names, name), append(texts, string(b))
			}
		}
	}
	if len(texts) == 0 {
		return fmt.Errorf("no .txt or .md files with text in %s", *dir)
	}

	// Embed the files and the query, normalized: a dot product is then
	// the cosine similarity.
	opts := engine.EmbedOptions{Normalize: true, Truncate: true}
	docs, err := m.Embed(ctx, texts, opts)
	if err != nil {
		return err
	}
	q, err := m.Embed(ctx, []string{*prefix + query}, opts)
	if err != nil {
		return err
	}
	type hit struct {
		name  string
		score float32
	}
	hits := make([]hit, len(names))
	for i, v := range docs.Vectors {
		for j, x := range v {
			hits[i].score += x * q.Vectors[0][j]
		}
		hits[i].name = names[i]
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return -cmpFloat(a.score, b.score) })
	for _, h := range hits[:min(*top, len(hits))] {
		fmt.Fprintf(out, "%.4f  %s\n", h.score, h.name)
	}
	return nil
}

func cmpFloat(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
