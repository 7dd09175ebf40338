// Package tokenizer turns text into token ids and back for Llama-3-style
// byte-level BPE vocabularies, the kind SmolLM3 uses (128,256 tokens, of
// which 256 are added tokens such as <|im_start|> and <think>).
//
// # Loading
//
// A tokenizer comes from a GGUF model file (the tokenizer.ggml.* keys) or
// from a Hugging Face tokenizer.json (plain or gzipped):
//
//	tok, err := tokenizer.FromGGUF(f)             // f is an open *gguf.File
//	tok, err := tokenizer.LoadJSON("tokenizer.json.gz")
//
// Both loaders accept only what this package implements — the Llama-3 split
// pattern, byte-level BPE without unknown token or byte fallback, and added
// tokens without lstrip/rstrip — and return an error naming the component
// otherwise, instead of producing different ids than the reference.
//
// # Encoding
//
// Encode(text, parseSpecial) runs the pipeline of Hugging Face's tokenizers:
//
//  1. Added tokens are cut out of the raw text first (leftmost, longest).
//     Special ones (<|im_end|>, …) only when parseSpecial is true — pass false
//     for untrusted text such as user messages fed to a model outside the
//     chat template; user-defined ones (SmolLM3's <think>, <tool_call>, …)
//     always.
//  2. The text between them is split by the Llama-3 pattern
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//     which is implemented by hand (Go's regexp has no lookahead): at each
//     position the alternatives are tried in order and the first match is
//     one piece. Letters and numbers are classified by Unicode 16.0, as the
//     reference tokenizers do (Go's own tables are Unicode 15.0).
//  3. Each piece becomes ids by BPE over its bytes. With ignore_merges (on
//     for SmolLM3) a piece that is itself a vocabulary entry is that entry.
//     Otherwise the adjacent pair with the lowest merge rank is merged,
//     the leftmost one on a tie, until no pair can merge.
//
// Nothing is added around the ids: no BOS, no EOS (SmolLM3 uses neither;
// see AddBOS and BOS for models that do).
//
// # ignore_merges and GGUF files
//
// SmolLM3's tokenizer.json sets ignore_merges, and so do Llama 3's. GGUF
// files of SmolLM3 say pre = "smaug-bpe", for which llama.cpp does not apply
// ignore_merges; on 588 rare words (" Việt" is 101798 in Hugging Face, three
// tokens in llama.cpp) the two disagree. FromGGUF follows Hugging Face, the
// tokenizer the model was trained with, for every Llama-3 pre-tokenizer name;
// WithIgnoreMerges(false) reproduces llama.cpp's smaug-bpe instead.
//
// # Decoding
//
// Decode concatenates the bytes of the tokens and reads them as UTF-8,
// replacing each maximal invalid subsequence by one U+FFFD, exactly as
// Hugging Face does; no spaces are cleaned up. A character often spans two
// or three tokens (an emoji), so decoding token by token and concatenating
// the strings is wrong: a StreamDecoder holds incomplete characters back.
//
// # Why not an existing Go tokenizer
//
// github.com/sugarme/tokenizer (v0.3.0, the Go port of Hugging Face's
// library) was evaluated and rejected: it cannot load this tokenizer.json
// (Go's regexp has no lookahead for \s+(?!\S)), and with the pattern patched
// it drops or splits added tokens, re-splits pieces with a GPT-2 regex,
// lacks ignore_merges and breaks BPE ties differently — 57.9% exact on the
// reference cases, 0 of 25 chat prompts — at about 0.04 MB/s. This package
// is exact on all of them (tokenizer_cases, tokenizer_fuzz,
// ignore_merges_cases, unicode_version_cases, the 1 MB bench text and the
// chat prompts in ../shared/tokenizer) and encodes tens of MB/s.
package tokenizer
