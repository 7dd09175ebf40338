package synth

import "fmt"

// Vocab is a byte-level BPE tokenizer in the form GGUF stores it
// (tokenizer.ggml.*), in GPT-2's byte encoding.
type Vocab struct {
	Tokens []string
	Types  []int32 // 1 normal, 3 control, 4 user-defined
	Merges []string
	BOS    uint32 // <|begin_of_text|>
	EOS    uint32 // <|im_end|>, the end of a chat turn, as in SmolLM3
	PAD    uint32 // <|end_of_text|>
}

// Token types as llama.cpp numbers them.
const (
	TokenNormal      = 1
	TokenControl     = 3
	TokenUserDefined = 4
)

// builtinMerges spell some common English pieces, enough to tokenize
// "The quick brown fox jumps over the lazy dog." into a few tokens.
var builtinMerges = []string{
	"Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t",
	"Ġ w", "Ġ o", "e n", "Ġ c", "i t", "i s", "a n", "o r", "e s", "Ġ b",
	"e d", "Ġ f", "in g", "Ġ p", "o u", "Ġa n", "a l", "a r", "Ġt o", "Ġ m",
	"Ġo f", "Ġ in", "Ġ d", "Ġ h", "Ġan d", "l e", "Ġ l", "o w", "l l", "Ġ T",
	"T he", "Ġ H", "H e", "He ll", "Hell o", "Ġw or", "Ġwor l", "Ġworl d", "Ġ q", "Ġq u",
	"Ġqu i", "Ġqui c", "Ġquic k", "Ġb r", "Ġbr ow", "Ġbrow n", "Ġf o", "Ġfo x", "Ġ j", "Ġj u",
	"Ġju m", "Ġjum p", "Ġjump s", "Ġo v", "Ġov er", "Ġl a", "Ġla z", "Ġlaz y", "Ġd o", "Ġdo g",
	"Ċ Ċ", "Ġ Ġ", "t h", "T h", "Ġ 1",
}

var builtinSpecials = []struct {
	text string
	typ  int32
}{
	{"<|begin_of_text|>", TokenControl},
	{"<|end_of_text|>", TokenControl},
	{"<|im_start|>", TokenControl},
	{"<|im_end|>", TokenControl},
	{"<think>", TokenUserDefined},
	{"</think>", TokenUserDefined},
}

// BuiltinVocabSize is the size of BuiltinVocab(0): 256 bytes, 75 merges
// and 6 special tokens.
const BuiltinVocabSize = 337

// BuiltinVocab returns the 337-token vocabulary of the tiny golden models:
// ids 0–255 are the bytes in GPT-2's order (id 0 is "!", 198 is "\n"),
// 256–330 the merged tokens, then <|begin_of_text|>, <|end_of_text|>,
// <|im_start|>, <|im_end|> (control) and <think>, </think> (user-defined).
// If n is larger, control tokens <|reserved_special_token_K|> pad it to n
// tokens, as in Llama 3.
func BuiltinVocab(n int) (*Vocab, error) {
	if n != 0 && n < BuiltinVocabSize {
		return nil, fmt.Errorf("synth: vocabulary of %d tokens is smaller than the built-in %d", n, BuiltinVocabSize)
	}
	v := &Vocab{}
	index := map[string]bool{}
	add := func(s string, typ int32) {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, typ)
		index[s] = true
	}
	for _, r := range byteRunes() {
		add(string(r), TokenNormal)
	}
	for _, m := range builtinMerges {
		var a, b string
		for i := 1; i < len(m); i++ { // the first byte is never the separator
			if m[i] == ' ' {
				a, b = m[:i], m[i+1:]
				break
			}
		}
		if !index[a] || !index[b] {
			return nil, fmt.Errorf("synth: internal: merge %q uses an unknown token", m)
		}
		if !index[a+b] {
			add(a+b, TokenNormal)
		}
		v.Merges = append(v.Merges, m)
	}
	first := uint32(len(v.Tokens))
	for _, s := range builtinSpecials {
		add(s.text, s.typ)
	}
	v.BOS, v.PAD, v.EOS = first, first+1, first+3
	for k := 0; len(v.Tokens) < n; k++ {
		add(fmt.Sprintf("<|reserved_special_token_%d|>", k), TokenControl)
	}
	return v, nil
}

// byteRunes is GPT-2's bytes_to_unicode in its id order: the printable
// bytes stand for themselves and come first; the other 68 bytes map to
// U+0100 upwards.
func byteRunes() []rune {
	var out []rune
	used := [256]bool{}
	for _, r := range [][2]int{{'!', '~'}, {0xa1, 0xac}, {0xae, 0xff}} {
		for b := r[0]; b <= r[1]; b++ {
			out = append(out, rune(b))
			used[b] = true
		}
	}
	extra := 0
	for b := range 256 {
		if !used[b] {
			out = append(out, rune(256+extra))
			extra++
		}
	}
	return out
}
