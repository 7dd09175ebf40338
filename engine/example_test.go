package engine_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/smolgo/smolgo/engine"
)

// A model plugs into the engine with a Backend (the forward step) and a
// Format (template, tokenizer, markers). This toy "echo" model's vocabulary
// is the 256 bytes plus two markers, and its forward pass predicts the
// prompt's text again, byte by byte, then the end of its turn. A real
// architecture package also registers a loader, so that engine.Open reads
// its GGUF files:
//
//	func init() { engine.Register(engine.Architecture{Name: "echo", Load: load}) }
func Example_plugIn() {
	cfg, err := engine.NewConfig(engine.WithMaxSequences(2))
	if err != nil {
		log.Fatal(err)
	}
	m, err := engine.New(echoBackend{}, echoFormat{}, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	msgs := []engine.Message{{Role: "user", Content: "Hello, engine!"}}
	for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case engine.EventContent:
			fmt.Print(ev.Text)
		case engine.EventDone:
			fmt.Printf("\n%d prompt tokens, %d generated, stop: %s\n", ev.Stats.PromptTokens, ev.Stats.GeneratedTokens, ev.Stats.StopReason)
		}
	}
	// Output:
	// Hello, engine!
	// 15 prompt tokens, 15 generated, stop: stop
}

// The echo model's markers: sep ends the prompt, end ends the answer.
const (
	sep   = 256
	end   = 257
	vocab = 258
)

// echoBackend is the forward pass: a cache is the token history, and each
// row predicts the next byte of the text before sep.
type echoBackend struct{}

type echoCache struct{ toks []int32 }

func (c *echoCache) Len() int             { return len(c.toks) }
func (c *echoCache) MaxLen() int          { return 1024 }
func (c *echoCache) Truncate(n int) error { c.toks = c.toks[:min(n, len(c.toks))]; return nil }
func (c *echoCache) Bytes() int64         { return int64(4 * cap(c.toks)) }
func (c *echoCache) Close() error         { return nil }

func (echoBackend) Vocab() int                      { return vocab }
func (echoBackend) BatchSize() int                  { return 512 }
func (echoBackend) NewCache() (engine.Cache, error) { return &echoCache{}, nil }

func (echoBackend) Step(ctx context.Context, batch []engine.Seq) error {
	for _, s := range batch {
		c := s.Cache.(*echoCache)
		c.toks = append(c.toks, s.Tokens...)
		rows := len(s.Logits) / vocab
		for r := range rows {
			hist := c.toks[:len(c.toks)-rows+r+1] // what row r has seen
			row := s.Logits[r*vocab : (r+1)*vocab]
			clear(row)
			row[predict(hist)] = 1
		}
	}
	return nil
}

func predict(hist []int32) int32 {
	i := slices.Index(hist, sep)
	if i < 0 {
		return end
	}
	if said := len(hist) - i - 1; said < i {
		return hist[said]
	}
	return end
}

// echoFormat is the language side: the prompt is the last message's bytes
// and sep; every byte token is text.
type echoFormat struct{}

func (echoFormat) Prompt(msgs []engine.Message, _ engine.PromptOptions) ([]int32, error) {
	return append(echoTokenizer{}.Encode(msgs[len(msgs)-1].Content, false), sep), nil
}
func (echoFormat) NewDecoder() engine.Decoder                   { return &byteDecoder{} }
func (echoFormat) EndOfTurn(id int32) bool                      { return id == end }
func (echoFormat) NewParser(engine.ParserOptions) engine.Parser { return contentParser{} }
func (echoFormat) Tokenizer() (engine.Tokenizer, error)         { return echoTokenizer{}, nil }

// byteDecoder holds back incomplete UTF-8 characters (the toy skips that).
type byteDecoder struct{}

func (*byteDecoder) Push(id int32) (string, error) {
	return string(echoTokenizer{}.TokenBytes(id)), nil
}
func (*byteDecoder) Flush() string { return "" }

type contentParser struct{}

func (contentParser) Push(id int32, text string) []engine.Event {
	return []engine.Event{{Kind: engine.EventContent, Text: text}}
}
func (contentParser) Flush() []engine.Event { return nil }

type echoTokenizer struct{}

func (echoTokenizer) Encode(text string, _ bool) []int32 {
	ids := make([]int32, len(text))
	for i := range len(text) {
		ids[i] = int32(text[i])
	}
	return ids
}
func (t echoTokenizer) Decode(ids []int32, _ bool) (string, error) {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return string(b), nil
}
func (echoTokenizer) TokenBytes(id int32) []byte {
	if id < 0 || id >= 256 {
		return nil
	}
	return []byte{byte(id)}
}
func (echoTokenizer) Normal(id int32) bool     { return id >= 0 && id < 256 }
func (echoTokenizer) Len() int                 { return vocab }
func (echoTokenizer) EndOfGeneration() []int32 { return []int32{end} }
