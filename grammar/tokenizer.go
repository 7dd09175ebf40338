package grammar

import "github.com/smolgo/smolgo/tokenizer"

// TokenBytes returns the byte strings of a tokenizer's vocabulary in the
// form NewVocab takes: normal tokens with their bytes, added tokens (control
// tokens such as <|im_start|> and tags such as <think>) as nil, so that
// constrained output is always plain text. Pass tok.EndOfGeneration() as
// NewVocab's eog.
func TokenBytes(tok *tokenizer.Tokenizer) [][]byte {
	out := make([][]byte, tok.Len())
	for id := range out {
		if k, ok := tok.Kind(int32(id)); ok && k == tokenizer.Normal {
			out[id] = tok.TokenBytes(int32(id))
		}
	}
	return out
}
