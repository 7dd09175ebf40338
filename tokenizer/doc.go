// Package tokenizer turns text into token ids and back for the vocabularies
// of GGUF language and embedding models, giving the ids llama.cpp gives.
//
// # Vocabularies
//
// A GGUF file names its algorithm in tokenizer.ggml.model:
//
//   - "gpt2": byte-level BPE. tokenizer.ggml.pre names the pre-tokenizer
//     that cuts text into pieces before BPE: Llama 3's pattern (llama-bpe,
//     llama3, llama-v3, smaug-bpe: Llama 3.x, SmolLM3), Qwen2's (qwen2,
//     deepseek-r1-qwen: Qwen2, Qwen2.5, Qwen3; qwen35), GPT-2's (gpt-2,
//     phi-2, mpt), GPT-2's with digits one by one (smollm, starcoder,
//     refact, command-r: SmolLM, SmolLM2, StarCoder), OpenAI's o200k
//     pattern (gpt-4o, llama4, minimax-m2, kanana2, talkie: Phi-4-mini,
//     Llama 4), and the regex lists of falcon, deepseek-coder and
//     deepseek-llm.
//   - "llama": SentencePiece (Llama 2, Gemma 3, Phi-3, Baichuan).
//   - "gemma4": Gemma 4's BPE over characters.
//   - "bert": WordPiece (BERT, bge and other embedding models).
//
// SupportedModels and SupportedPreTokenizers list them; any other value is
// an error naming the file's value and the supported ones, rather than ids
// that would silently differ.
//
// # Loading
//
// A tokenizer comes from a GGUF file's tokenizer.ggml.* keys (a model, or a
// vocabulary-only file such as llama.cpp's models/ggml-vocab-*.gguf), or
// from a Hugging Face tokenizer.json in the format of SmolLM3 and Llama 3
// (plain or gzipped):
//
//	tok, err := tokenizer.FromGGUF(f)             // f is an open *gguf.File
//	tok, err := tokenizer.LoadGGUF("ggml-vocab-qwen2.gguf")
//	tok, err := tokenizer.LoadJSON("tokenizer.json.gz")
//
// Every array length, id and score of the file is checked; a malformed one is
// an error naming the key, never a panic.
//
// # Encoding
//
// Encode(text, parseSpecial) runs llama.cpp's pipeline:
//
//  1. Added tokens are cut out of the raw text first. Special ones (GGUF
//     CONTROL and UNKNOWN: <|im_end|>, <s>, [CLS], …) only when parseSpecial
//     is true — pass false for untrusted text such as user messages fed to a
//     model outside the chat template; user-defined ones (SmolLM3's <think>)
//     always. llama.cpp takes the longest token first, everywhere in the
//     text, then the next longest in what is left; Hugging Face takes the
//     leftmost; the two differ only on overlapping tokens, and the Llama-3
//     family follows Hugging Face (see below).
//  2. The text between them becomes ids by the vocabulary's algorithm, one
//     of the four below.
//
// Byte-level BPE: the pre-tokenizer's pattern cuts the text into pieces
// (implemented by hand: Go's regexp has no lookahead), and each piece's
// bytes are merged by rank, the lowest-ranked adjacent pair first, the
// leftmost on a tie. With ignore_merges (Llama 3) a piece that is a token
// is that token.
//
// SentencePiece: spaces become ▁, with one more in front of text that starts
// the input or follows an added token (add_space_prefix; off for Gemma 3);
// then adjacent pieces join while their concatenation is a token, the
// highest score first, the leftmost on a tie; a character left without a
// token becomes its bytes' <0xXX> tokens.
//
// Gemma 4: spaces become ▁; each line is merged by rank over its characters,
// with byte fallback as for SentencePiece.
//
// WordPiece: the text is lower-cased and stripped of accents (as the file
// says), cut into words at white space and around punctuation and CJK
// ideographs, and each word is covered from the left by the longest tokens,
// or is [UNK] (llama.cpp's files store "##" continuations without the "##"
// and word starts with ▁).
//
// Encode adds nothing around the ids. Tokenize(text, addSpecial,
// parseSpecial) is llama.cpp's llama_tokenize: with addSpecial it adds BOS
// and EOS where the vocabulary asks for them (AddBOS, AddEOS), and
// WordPiece's [CLS] and [SEP]. EncodeMarked parses special tokens
// everywhere but in given byte ranges, for chat prompts.
//
// Characters are classified as llama.cpp does, by Unicode 15.1
// (llama.cpp's unicode-data.cpp; Go's tables are 15.0 and the 15.1
// additions are added here), and invalid UTF-8 is read as llama.cpp reads
// it: a byte it cannot decode stands for U+FFFD (SentencePiece works on the
// raw bytes, as llama.cpp). Tokenizing any bytes never fails.
//
// # The Llama-3 family follows Hugging Face
//
// Llama 3's pattern (llama-bpe, llama3, llama-v3, smaug-bpe, and
// tokenizer.json) was implemented first against Hugging Face's tokenizer,
// which the models were trained with, and still follows it where llama.cpp
// differs: letters and numbers of Unicode 16.0, case folding in contractions
// ('ſ is 's), the leftmost added token first, invalid UTF-8 kept byte for
// byte (so any bytes decode back), and ignore_merges. SmolLM3's tokenizer.json
// sets ignore_merges, and so do Llama 3's; GGUF files of SmolLM3 say pre =
// "smaug-bpe", for which llama.cpp does not apply it: on 588 rare words
// (" Việt" is 101798 in Hugging Face, three tokens in llama.cpp) the two
// disagree. FromGGUF follows Hugging Face for every Llama-3 pre-tokenizer
// name; WithIgnoreMerges(false) reproduces llama.cpp's smaug-bpe instead.
// On llama.cpp's reference cases for llama-bpe the two agree.
//
// # Decoding
//
// Decode concatenates the tokens' bytes (TokenBytes: byte-level BPE tokens'
// bytes; for the other kinds a token's text with ▁ as a space, and a byte
// token <0xXX> as its byte) and reads them as UTF-8, replacing each maximal
// invalid subsequence by one U+FFFD as Hugging Face does. For SentencePiece
// with add_space_prefix and for WordPiece the first token loses its leading
// space, so that decoding Encode(s) gives s. No other spaces are cleaned up
// (llama.cpp's and Hugging Face's clean_up_tokenization_spaces, on for BERT,
// is not applied). A character often spans two or more tokens (an emoji;
// SentencePiece's byte tokens), so decoding token by token and
// concatenating the strings is wrong: a StreamDecoder holds incomplete
// characters back.
//
// # Correctness
//
// Exact on llama.cpp's shipped reference cases (models/ggml-vocab-*.gguf.inp
// and .out, Hugging Face's ids) for qwen2, qwen35, llama-bpe, llama-spm,
// phi-3, gemma-4, bert-bge, gpt-2, mpt, starcoder, refact, command-r,
// falcon, deepseek-coder and deepseek-llm; equal to llama.cpp (llamaref
// tokenize) on a 321-text fuzz set under 17 vocabularies with and without
// special tokens, on the 1 MB bench text for Qwen2, Llama 2, Gemma 3 (Gemma
// 4's tokens as a SentencePiece vocabulary), Gemma 4, bge and gpt-4o, and
// (SMOLGO_HEAVY=1) on 2,000 fresh random texts under the same 17. llama.cpp
// ships no gpt-4o vocabulary: that pre-tokenizer is checked on Qwen2's
// tokens and merges under pre "gpt-4o", its pieces themselves equal
// llama.cpp's (its unicode_regex_split) on the fuzz set and the bench text,
// and the real o200k vocabularies of gpt-oss (o200k_harmony, 201,088
// tokens with its markers) and GPT-4o, written as GGUF files the way
// convert_hf_to_gguf.py writes them from their tokenizer.json (npm
// packages that testdata/o200k/setup.sh installs), give llama.cpp's ids on
// the fuzz set, harmony conversations and the bench text.
// The Llama-3 family is exact against Hugging Face on
// tokenizer_cases, tokenizer_fuzz, ignore_merges_cases,
// unicode_version_cases, the 1 MB bench text and the chat prompts in
// ../shared/tokenizer.
//
// # Why not an existing Go tokenizer
//
// github.com/sugarme/tokenizer (v0.3.0, the Go port of Hugging Face's
// library) was evaluated and rejected: it cannot load SmolLM3's
// tokenizer.json (Go's regexp has no lookahead for \s+(?!\S)), and with the
// pattern patched it drops or splits added tokens, re-splits pieces with a
// GPT-2 regex, lacks ignore_merges and breaks BPE ties differently — 57.9%
// exact on the reference cases, 0 of 25 chat prompts — at about 0.04 MB/s.
// This package encodes tens of MB/s.
package tokenizer
