package tokenizer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tokenizer"
)

// A real program loads SmolLM3's tokenizer from its GGUF or tokenizer.json;
// this example builds a tiny one (the 256 byte tokens, three merges and two
// added tokens) so that it runs anywhere.
func Example() {
	tok, err := tokenizer.ReadJSON(strings.NewReader(tinyTokenizerJSON()))
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode("<|im_start|>hi there<|im_end|>", true)
	fmt.Println(ids)
	var texts []string
	for _, id := range ids {
		texts = append(texts, tok.Token(id)) // byte-level form: 'Ġ' is a space
	}
	fmt.Printf("%q\n", texts)

	// Without special parsing, <|im_end|> is plain text.
	fmt.Println(len(tok.Encode("<|im_end|>", false)), "tokens")

	text, _ := tok.Decode(ids, true) // skip special tokens
	fmt.Printf("%q\n", text)
	// Output:
	// [256 71 72 259 257]
	// ["<|im_start|>" "h" "i" "Ġthere" "<|im_end|>"]
	// 10 tokens
	// "hi there"
}

// Loading SmolLM3's tokenizer from a model file and encoding a chat prompt
// (compiled, not run: it needs a model file).
func ExampleLoadGGUF() {
	tok, err := tokenizer.LoadGGUF("SmolLM3-3B-Q4_K_M.gguf")
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode("<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n", true)
	fmt.Println(ids) // [128011 882 198 13347 0 128012 198 128011 78191 198]
	eos, _ := tok.EOS()
	fmt.Println(eos, tok.Token(eos)) // 128012 <|im_end|>
}

// Tokenize is llama.cpp's llama_tokenize: it adds what the vocabulary puts
// around a prompt. A real program loads a model or a vocabulary-only GGUF
// (Gemma 3, Llama 2, Qwen3, BERT, ...); this example writes a tiny
// SentencePiece vocabulary in memory: pieces with scores, and byte tokens
// for what no piece covers.
func ExampleTokenizer_Tokenize() {
	var buf bytes.Buffer
	err := gguf.Write(&buf, []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "llama"}, // SentencePiece
		{Key: "tokenizer.ggml.tokens", Value: []string{"<unk>", "<s>", "</s>", "▁", "h", "i", "!", "▁h", "▁hi", "<0xC3>", "<0xA9>"}},
		{Key: "tokenizer.ggml.scores", Value: []float32{0, 0, 0, -10, -10, -10, -10, -2, -1, 0, 0}},
		{Key: "tokenizer.ggml.token_type", Value: []int32{2, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6}}, // unknown, control, normal, byte
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.Model(), tok.AddBOS())

	// "hi hi!é" is read as "▁hi▁hi!é": the pieces with the best scores
	// join first; é has no piece and becomes its two bytes.
	ids := tok.Tokenize("hi hi!é", true, false)
	fmt.Println(ids)
	fmt.Println(tok.Encode("hi hi!é", false)) // no BOS

	text, _ := tok.Decode(ids, true) // without <s>; the leading space goes
	fmt.Printf("%q\n", text)
	// Output:
	// llama true
	// [1 8 8 6 9 10]
	// [8 8 6 9 10]
	// "hi hi!é"
}

// A StreamDecoder prints generated tokens as they come, holding back a
// character split across tokens.
func ExampleStreamDecoder() {
	tok, err := tokenizer.ReadJSON(strings.NewReader(tinyTokenizerJSON()))
	if err != nil {
		log.Fatal(err)
	}
	d := tok.NewStreamDecoder(true)
	for _, id := range tok.Encode("é!", false) { // é is two byte tokens
		piece, _ := d.Push(id)
		fmt.Printf("%d → %q\n", id, piece)
	}
	fmt.Printf("flush → %q\n", d.Flush())
	// Output:
	// 127 → ""
	// 102 → "é"
	// 0 → "!"
	// flush → ""
}

// tinyTokenizerJSON writes a minimal tokenizer.json in SmolLM3's format.
func tinyTokenizerJSON() string {
	// The 256 byte tokens in GPT-2 order: self-mapped bytes first.
	var order []string
	for pass := range 2 {
		for b := range 256 {
			r := byteLevel(byte(b))
			if ([]rune(r)[0] >= 0x100) == (pass == 1) {
				order = append(order, r)
			}
		}
	}
	vocab := map[string]int{}
	for i, s := range order {
		vocab[s] = i
	}
	// 256 and 257 are the added tokens; the merges build "Ġthere".
	vocab["Ġt"], vocab["he"], vocab["re"], vocab["here"], vocab["Ġthere"] = 258, 260, 261, 262, 259
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": 256, "content": "<|im_start|>", "special": true},
			{"id": 257, "content": "<|im_end|>", "special": true},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type": "BPE", "ignore_merges": true, "vocab": vocab,
			"merges": [][2]string{{"Ġ", "t"}, {"h", "e"}, {"r", "e"}, {"he", "re"}, {"Ġt", "here"}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// byteLevel returns the character that stands for byte b in the GPT-2
// byte-level alphabet.
func byteLevel(b byte) string {
	if b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
		return string(rune(b))
	}
	n := 0
	for c := 0; c < int(b); c++ {
		if !(c >= 0x21 && c <= 0x7E || c >= 0xA1 && c <= 0xAC || c >= 0xAE) {
			n++
		}
	}
	return string(rune(0x100 + n))
}
