package tokenizer

import (
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/gguf"
)

// llama3Pre lists the tokenizer.ggml.pre names whose pre-tokenizer is the
// Llama-3 split pattern, the one this package implements.
var llama3Pre = map[string]bool{"llama-bpe": true, "llama3": true, "llama-v3": true, "smaug-bpe": true}

// GGUF token types (tokenizer.ggml.token_type).
const (
	ggufNormal      = 1
	ggufUnknown     = 2
	ggufControl     = 3
	ggufUserDefined = 4
	ggufUnused      = 5
	ggufByte        = 6
)

// LoadGGUF opens a GGUF file, reads its tokenizer and closes it.
func LoadGGUF(path string, opts ...Option) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := FromGGUF(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromGGUF reads the tokenizer stored in a GGUF file's metadata:
// tokenizer.ggml.model (must be "gpt2", byte-level BPE),
// tokenizer.ggml.pre (must name the Llama-3 pattern: llama-bpe, llama3,
// llama-v3 or smaug-bpe), tokens, token_type (CONTROL tokens become Special,
// USER_DEFINED ones UserDefined), merges, and the optional bos/eos/eot ids
// and add_bos_token. The tokenizer copies what it needs; f may be closed
// afterwards.
//
// ignore_merges is on for every accepted pre-tokenizer (see the package
// documentation); WithIgnoreMerges(false) gives llama.cpp's smaug-bpe.
func FromGGUF(f *gguf.File, opts ...Option) (*Tokenizer, error) {
	model, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.model %q is not implemented (only gpt2, byte-level BPE)", model)
	}
	pre, err := f.String("tokenizer.ggml.pre")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w (without it llama.cpp uses its GPT-2 default pattern, which is not implemented)", err)
	}
	if !llama3Pre[pre] {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.pre %q is not implemented (only the Llama-3 pattern: llama-bpe, llama3, llama-v3, smaug-bpe)", pre)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	lines, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	merges, err := splitMerges(lines, "tokenizer.ggml.merges")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	kinds := make([]Kind, len(tokens))
	types, err := f.Int32s("tokenizer.ggml.token_type")
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		// every token is normal
	case err != nil:
		return nil, fmt.Errorf("tokenizer: %w", err)
	case len(types) != len(tokens):
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.token_type has %d entries for %d tokens", len(types), len(tokens))
	default:
		for id, ty := range types {
			switch ty {
			case 0, ggufNormal, ggufByte:
				kinds[id] = Normal
			case ggufControl, ggufUnknown:
				kinds[id] = Special
			case ggufUserDefined:
				kinds[id] = UserDefined
			case ggufUnused:
				kinds[id] = Unused
			default:
				return nil, fmt.Errorf("tokenizer: tokenizer.ggml.token_type[%d] = %d is not a known token type", id, ty)
			}
		}
	}
	s := spec{
		tokens:       tokens,
		kinds:        kinds,
		merges:       merges,
		pre:          pre,
		ignoreMerges: true,
	}
	for _, k := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &s.bos},
		{"tokenizer.ggml.eos_token_id", &s.eos},
		{"tokenizer.ggml.eot_token_id", &s.eot},
	} {
		*k.dst = -1
		id, err := f.Uint32(k.key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("tokenizer: %w", err)
		case int(id) >= len(tokens):
			return nil, fmt.Errorf("tokenizer: %s = %d is outside the %d-token vocabulary", k.key, id, len(tokens))
		default:
			*k.dst = int32(id)
		}
	}
	addBOS, err := f.Bool("tokenizer.ggml.add_bos_token")
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		// llama.cpp's default for the Llama-3 pre-tokenizers except smaug-bpe.
		s.addBOS = pre != "smaug-bpe" && s.bos >= 0
	case err != nil:
		return nil, fmt.Errorf("tokenizer: %w", err)
	default:
		s.addBOS = addBOS
	}
	collect(opts).apply(&s)
	t, err := build(s)
	if err != nil {
		return nil, err
	}
	return t, nil
}
