package bert

import (
	"errors"
	"fmt"
	"sync"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/embedtok"
	"github.com/smolgo/smolgo/tokenizer"
)

func init() {
	engine.Register(engine.Architecture{Name: Arch, Load: func(f *gguf.File, cfg engine.Config) (engine.Loaded, error) {
		p, err := build(f, cfg)
		if err != nil {
			return engine.Loaded{}, err
		}
		return engine.Loaded{Encoder: p.enc, Format: p.format, Pooling: p.w.Config.Pooling, Matryoshka: p.w.Config.Matryoshka,
			Close: func() error {
				p.enc.Close()
				return f.Close()
			}}, nil
	}})
}

type parts struct {
	w      *Weights
	enc    *Encoder
	format *Format
}

// build reads and checks the file and makes the encoder with the engine's
// options as they are.
func build(f *gguf.File, cfg engine.Config) (*parts, error) {
	bc, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	w, err := LoadWeights(f, bc)
	if err != nil {
		return nil, err
	}
	pool := bc.Pooling
	if cfg.Pooling != engine.PoolDefault {
		pool = cfg.Pooling
	}
	switch {
	case pool == backend.PoolDefault:
		return nil, errors.New("bert: the file has no pooling_type (or pooling none); choose one with engine.WithPooling")
	case pool == backend.PoolRank && !w.Ranks():
		return nil, errors.New("bert: rank pooling needs a classification head (cls.output.weight), which the file lacks")
	}
	enc, err := NewEncoder(w, cfg.Options)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Debug("bert: model loaded", "layers", bc.Layers, "embd", bc.Embd, "heads", bc.Heads, "ffn", bc.FFN,
		"vocab", bc.Vocab, "positions", bc.Positions, "pooling", pool, "rank_head", w.Ranks(), "threads", enc.Threads(),
		"batch", enc.BatchSize(), "packed_bytes", len(enc.packed))
	return &parts{w: w, enc: enc, format: &Format{file: f}}, nil
}

// Format is a BERT model's language side (engine.Format and
// engine.EmbedFormat): its tokenizer, read from the file on first use, and
// the special tokens around inputs ([CLS] text [SEP]; [CLS] query [SEP]
// document for a reranker, as llama-server builds them). An encoder has no
// chat template: Prompt fails.
type Format struct {
	file *gguf.File
	once sync.Once
	tok  *tokenizer.Tokenizer
	sp   embedtok.Special
	err  error
}

// NewFormat returns the format of a BERT file.
func NewFormat(f *gguf.File) *Format { return &Format{file: f} }

func (f *Format) load() (*tokenizer.Tokenizer, embedtok.Special, error) {
	f.once.Do(func() {
		if f.sp, f.err = embedtok.Read(f.file); f.err != nil {
			return
		}
		f.tok, f.err = tokenizer.FromGGUF(f.file)
		if f.err != nil {
			f.err = fmt.Errorf("bert: the file's vocabulary: %w", f.err)
		}
	})
	return f.tok, f.sp, f.err
}

// Tokenizer implements engine.Format.
func (f *Format) Tokenizer() (engine.Tokenizer, error) {
	t, _, err := f.load()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// EmbedTokens implements engine.EmbedFormat: [CLS] text [SEP], special
// tokens written in the text parsed (llama_tokenize with add_special and
// parse_special, as llama-server's /v1/embeddings).
func (f *Format) EmbedTokens(text string) ([]int32, error) {
	t, sp, err := f.load()
	if err != nil {
		return nil, err
	}
	return sp.Embed(t, text), nil
}

// RerankTokens implements engine.EmbedFormat (llama-server's
// format_prompt_rerank).
func (f *Format) RerankTokens(query, doc string) ([]int32, error) {
	t, sp, err := f.load()
	if err != nil {
		return nil, err
	}
	return sp.RerankInput(t, query, doc), nil
}

// RerankQuery implements engine.RerankFormat: the query is tokenized once
// for all the documents.
func (f *Format) RerankQuery(query string) (func(doc string) []int32, error) {
	t, sp, err := f.load()
	if err != nil {
		return nil, err
	}
	return sp.Reranker(t, query), nil
}

// Prompt implements engine.Format: an encoder has no chat template.
func (f *Format) Prompt([]engine.Message, engine.PromptOptions) ([]int32, error) {
	return nil, engine.ErrNotGenerative
}

// NewDecoder implements engine.Format: an encoder generates nothing to
// decode.
func (f *Format) NewDecoder() engine.Decoder { return noDecoder{} }

// EndOfTurn implements engine.Format.
func (f *Format) EndOfTurn(int32) bool { return false }

// NewParser implements engine.Format.
func (f *Format) NewParser(engine.ParserOptions) engine.Parser { return noParser{} }

type noDecoder struct{}

func (noDecoder) Push(int32) (string, error) { return "", engine.ErrNotGenerative }
func (noDecoder) Flush() string              { return "" }

type noParser struct{}

func (noParser) Push(int32, string) []engine.Event { return nil }
func (noParser) Flush() []engine.Event             { return nil }
