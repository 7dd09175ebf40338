package grammar

import (
	"sync"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tokenizer"
)

// SmolLM3's real vocabulary, loaded once per test binary.
var smolVocab struct {
	once sync.Once
	v    *Vocab
	tok  *tokenizer.Tokenizer
	err  error
}

// realVocab returns SmolLM3's 128,256-token vocabulary as a Vocab: normal
// tokens with their bytes, added tokens (control tokens and tags such as
// <think>) excluded, <|im_end|> and the other end-of-generation ids as EOG.
func realVocab(t testing.TB) (*Vocab, *tokenizer.Tokenizer) {
	t.Helper()
	path := sharedtest.Path(t, "tokenizer/smollm3-vocab.gguf")
	smolVocab.once.Do(func() {
		tok, err := tokenizer.LoadGGUF(path)
		if err != nil {
			smolVocab.err = err
			return
		}
		smolVocab.tok = tok
		smolVocab.v, smolVocab.err = NewVocab(TokenBytes(tok), tok.EndOfGeneration())
	})
	if smolVocab.err != nil {
		t.Fatal(smolVocab.err)
	}
	return smolVocab.v, smolVocab.tok
}
