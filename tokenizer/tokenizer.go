package tokenizer

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// Kind tells how a token is treated when text is encoded and decoded.
type Kind uint8

const (
	// Normal tokens come out of the vocabulary's algorithm (BPE merges,
	// SentencePiece pieces, WordPiece pieces, byte tokens). A byte-level
	// BPE token's text is stored in the byte-level alphabet.
	Normal Kind = iota
	// Special added tokens (GGUF type CONTROL or UNKNOWN, tokenizer.json
	// "special": true, and tokens llama.cpp treats as control by name such
	// as </s>) are matched in text only when special parsing is on, and are
	// dropped by decoding with skipSpecial.
	Special
	// UserDefined added tokens (GGUF type USER_DEFINED, tokenizer.json
	// "special": false, such as SmolLM3's <think>) are always matched in
	// text and always decoded.
	UserDefined
	// Unused tokens (GGUF UNUSED) are never cut out of text as added tokens;
	// outside byte-level BPE they decode to nothing, as in llama.cpp.
	Unused
)

// modelKind is the algorithm that turns a piece of text into ids.
type modelKind uint8

const (
	// byteBPE is GPT-2's byte-level BPE (tokenizer.ggml.model "gpt2"):
	// a pre-tokenizer pattern cuts the text into pieces and BPE merges
	// each piece's bytes, written in the byte-level alphabet.
	byteBPE modelKind = iota
	// charBPE is BPE over UTF-8 characters with spaces written as U+2581
	// and byte fallback (Gemma 4's "gemma4").
	charBPE
	// sentencePiece is llama.cpp's SentencePiece tokenizer ("llama"):
	// adjacent pieces merge by the vocabulary's scores.
	sentencePiece
	// wordPiece is BERT's WordPiece ("bert"): greedy longest match within
	// normalized words.
	wordPiece
)

// Tokenizer turns text into token ids and back for one vocabulary: byte-level
// BPE (Llama 3, SmolLM, Qwen2/3, GPT-2, StarCoder, ...), SentencePiece
// (Llama 2, Gemma 3), Gemma 4's BPE or BERT's WordPiece. It is safe for
// concurrent use; its only mutable parts are word caches guarded by mutexes.
type Tokenizer struct {
	text  []string // id → token text as stored (byte-level alphabet or added-token content)
	kinds []Kind
	bytes []byte   // all decoded token bytes, back to back
	offs  []uint32 // id → bytes[offs[id]:offs[id+1]]

	kind  modelKind
	model string    // tokenizer.ggml.model ("gpt2", "llama", "bert", "gemma4")
	split []pattern // byteBPE: the pre-tokenizer's patterns; nil for Llama 3's (matchAt)

	// llamaText: invalid UTF-8 is first rewritten as llama.cpp reads it
	// (llamaSanitize). llamaAdded: added tokens are cut out of the text in
	// llama.cpp's order (longest token first) rather than Hugging Face's
	// (leftmost first).
	llamaText, llamaAdded bool

	vocab        map[string]int32  // byteBPE: raw bytes of each Normal token → id
	short        map[uint64]int32  // the same for tokens of at most 7 bytes, keyed by packShort
	merges       map[uint64]uint64 // left<<32|right → rank<<32|merged id
	byteID       [256]int32        // byteBPE: the token of each byte
	ignoreMerges bool
	missingBytes bool // some byteID is -1: drop those symbols from the output
	added        addedSet
	pre          string
	warnings     []string // what FromGGUF passed over (Warnings)

	// all maps every token's text to its id, whatever its type, as
	// llama.cpp's token_to_id does (charBPE, sentencePiece, wordPiece).
	all     map[string]int32
	scores  []float32  // sentencePiece: token scores
	byteTok [256]int32 // charBPE, sentencePiece: the <0xXX> token of each byte, or -1
	lengths []int      // wordPiece: the distinct byte lengths of the tokens, longest first
	// glue holds the characters after which a U+2581 cannot start a new
	// chunk, because some token (sentencePiece) or merge (charBPE) joins
	// them; nil when chunking is off (see spmChunks).
	glue map[string]bool

	addSpacePrefix      bool  // sentencePiece: a space before text at the start or after an added token
	lower, stripAccents bool  // wordPiece normalizer
	stripFirstSpace     bool  // decoding drops the first piece's leading space
	bos, eos, unk, sep  int32 // -1 when unknown
	addBOS, addEOS      bool
	eog                 []int32

	cache wordCache
	hot   sync.Pool    // of *hotWords, so each goroutine has its own
	seed  maphash.Seed // for hotWords.longKeys
}

// spec is what a loader hands to build: the vocabulary in id order, with
// texts in the byte-level alphabet for Normal tokens of byte-level BPE and
// raw content for everything else.
type spec struct {
	kind         modelKind
	model        string
	tokens       []string
	kinds        []Kind
	byteTokens   []bool // tokens of GGUF type BYTE (<0xXX>), if any
	scores       []float32
	merges       [][2]string
	pre          string // for messages and Pre()
	split        []pattern
	llama        bool // llamaText and llamaAdded
	ignoreMerges bool
	bos, eos     int32
	eot, unk     int32
	sep          int32
	extraEOG     []int32 // more end-of-generation ids (llama.cpp's FIM pad/repo/separator, EOM)
	addBOS       bool
	addEOS       bool
	spacePrefix  bool
	lower        bool
	stripAccents bool
	lstrip       []int32 // added tokens that eat the white space before them
	rstrip       []int32 // ... and after them
	dropEOG      []int32 // tokens named like an end of turn that are not one (llama.cpp's workarounds)
	warnings     []string
}

// warn notes a quirk of the file that FromGGUF passes over as llama.cpp
// does (Tokenizer.Warnings), once.
func (s *spec) warn(format string, args ...any) {
	if w := fmt.Sprintf(format, args...); !slices.Contains(s.warnings, w) {
		s.warnings = append(s.warnings, w)
	}
}

func build(s spec) (*Tokenizer, error) {
	n := len(s.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: empty vocabulary")
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens is too large", n)
	}
	if len(s.kinds) != n {
		return nil, fmt.Errorf("tokenizer: %d token kinds for %d tokens", len(s.kinds), n)
	}
	t := &Tokenizer{
		text:         s.tokens,
		kinds:        s.kinds,
		offs:         make([]uint32, n+1),
		kind:         s.kind,
		model:        s.model,
		split:        s.split,
		llamaText:    s.llama,
		llamaAdded:   s.llama,
		ignoreMerges: s.ignoreMerges,
		pre:          s.pre,
		bos:          s.bos,
		eos:          s.eos,
		unk:          s.unk,
		sep:          s.sep,
		addBOS:       s.addBOS,
		addEOS:       s.addEOS,
		warnings:     s.warnings,
		seed:         maphash.MakeSeed(),
	}
	var added []addedToken
	var err error
	if s.kind == byteBPE {
		added, err = t.buildByteBPE(s)
	} else {
		added, err = t.buildText(s)
	}
	if err != nil {
		return nil, err
	}
	strip := func(ids []int32, set func(*addedToken)) {
		for _, id := range ids {
			for i := range added {
				if added[i].id == id {
					set(&added[i])
				}
			}
		}
	}
	strip(s.lstrip, func(a *addedToken) { a.lstrip = true })
	strip(s.rstrip, func(a *addedToken) { a.rstrip = true })
	t.added = newAddedSet(added)
	t.eog = endOfGeneration(t, s.dropEOG, append([]int32{s.eos, s.eot}, s.extraEOG...)...)
	return t, nil
}

// buildByteBPE fills the byte-level BPE tables: every Normal token's text
// must be in the byte-level alphabet, all 256 bytes must have a token, and
// every merge's parts and result must be tokens.
func (t *Tokenizer) buildByteBPE(s spec) ([]addedToken, error) {
	n := len(s.tokens)
	t.vocab = make(map[string]int32, n)
	t.short = make(map[uint64]int32)
	t.merges = make(map[uint64]uint64, len(s.merges))
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	// Merges and their results are looked up among all tokens whose text
	// is in the byte-level alphabet, Normal ones first (llama.cpp looks
	// among all tokens: Qwen2's "</s>" is a merge result and a control
	// token).
	byText := make(map[string]int32, n) // byte-level text → id
	var added []addedToken
	for pass := range 2 {
		for id, tok := range s.tokens {
			if (s.kinds[id] == Normal) != (pass == 0) {
				continue
			}
			if _, dup := byText[tok]; dup {
				continue
			}
			raw, inAlphabet := unmapBytes(tok)
			if !inAlphabet {
				continue
			}
			byText[tok] = int32(id)
			if s.kinds[id] == Normal || s.llama {
				t.vocab[string(raw)] = int32(id)
				if len(raw) <= 7 {
					t.short[packShort(string(raw))] = int32(id)
				}
			}
			if len(raw) == 1 && t.byteID[raw[0]] < 0 {
				t.byteID[raw[0]] = int32(id)
			}
		}
	}
	for id, tok := range s.tokens {
		raw, inAlphabet := unmapBytes(tok)
		switch s.kinds[id] {
		case Normal:
			if !inAlphabet && !s.llama {
				return nil, fmt.Errorf("tokenizer: token %d %q is not in the byte-level alphabet (not a byte-level BPE vocabulary?)", id, tok)
			}
		case Special, UserDefined:
			if tok == "" {
				return nil, fmt.Errorf("tokenizer: added token %d has empty content", id)
			}
			added = append(added, addedToken{text: tok, id: int32(id), special: s.kinds[id] == Special})
		}
		// Decoding follows Hugging Face's byte-level decoder: a token whose
		// characters are all in the alphabet stands for those bytes, any
		// other token for its own UTF-8 text. llama.cpp renders an added
		// token as its text even so (DeepSeek's user-defined "ö").
		if !inAlphabet || s.llama && s.kinds[id] != Normal {
			raw = []byte(tok)
		}
		t.bytes = append(t.bytes, raw...)
		t.offs[id+1] = uint32(len(t.bytes))
	}
	for b, id := range t.byteID {
		switch {
		case id >= 0:
		case s.llama:
			// llama.cpp drops a byte without a token; GPT-2's
			// vocabulary has none for bytes that UTF-8 never uses.
			t.missingBytes = true
		default:
			return nil, fmt.Errorf("tokenizer: no token for byte 0x%02X: byte-level BPE needs all 256 (byte fallback is not implemented)", b)
		}
	}
	for rank, m := range s.merges {
		l, okl := byText[m[0]]
		r, okr := byText[m[1]]
		if !okl || !okr {
			return nil, fmt.Errorf("tokenizer: merge %d (%q %q) uses a token that is not in the vocabulary", rank, m[0], m[1])
		}
		merged, ok := byText[m[0]+m[1]]
		if !ok {
			return nil, fmt.Errorf("tokenizer: merge %d (%q %q): result %q is not in the vocabulary", rank, m[0], m[1], m[0]+m[1])
		}
		key := uint64(l)<<32 | uint64(r)
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = uint64(rank)<<32 | uint64(merged)
		}
	}
	return added, nil
}

// eogNames are the token texts that end a generated turn, as llama.cpp
// lists them (llama-vocab.cpp): Llama 3's, ChatML's, Gemma's, Phi's, GPT-OSS's
// and others. llama.cpp treats a token so named as a control token whatever
// its type in the file.
var eogNames = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<|return|>": true, "<|call|>": true,
	"<|flush|>": true, "<|calls|>": true, "<end_of_turn>": true, "<|endoftext|>": true, "</s>": true,
	"<|eom_id|>": true, "<EOT>": true, "_<EOT>": true, "[EOT]": true, "[EOS]": true,
	"<|end_of_text|>": true, "<end_of_utterance>": true, "<eos>": true, "<turn|>": true,
	"<|tool_response>": true, "<｜end▁of▁sentence｜>": true, "[e~[": true,
}

// endOfGeneration lists the ids that end a generated turn: the given ids
// (EOS, EOT, ...), and every token named in eogNames, except those in drop.
func endOfGeneration(t *Tokenizer, drop []int32, ids ...int32) []int32 {
	var eog []int32
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.text) {
			eog = append(eog, id)
		}
	}
	for id, s := range t.text {
		if eogNames[s] {
			eog = append(eog, int32(id))
		}
	}
	eog = slices.DeleteFunc(eog, func(id int32) bool { return slices.Contains(drop, id) })
	slices.Sort(eog)
	return slices.Compact(eog)
}

// Len returns the vocabulary size (the number of ids).
func (t *Tokenizer) Len() int { return len(t.text) }

// Token returns the stored text of token id: the byte-level form of a normal
// byte-level BPE token (space shown as 'Ġ'), a SentencePiece, Gemma 4 or
// WordPiece token's text (space shown as '▁'), or the content of an added
// token. It returns "" for an id out of range.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.text) {
		return ""
	}
	return t.text[id]
}

// Kind returns how token id is treated; ok is false for an id out of range.
func (t *Tokenizer) Kind(id int32) (k Kind, ok bool) {
	if id < 0 || int(id) >= len(t.kinds) {
		return 0, false
	}
	return t.kinds[id], true
}

// Normal reports whether id is a Normal token: one that the vocabulary's
// algorithm makes from text, as opposed to an added (special or
// user-defined) or unused token.
func (t *Tokenizer) Normal(id int32) bool {
	k, ok := t.Kind(id)
	return ok && k == Normal
}

// ID returns the id of the token whose stored text is exactly s (an added
// token's content such as "<|im_end|>", or a normal token's text as Token
// shows it).
func (t *Tokenizer) ID(s string) (int32, bool) {
	if a, ok := t.added.byText[s]; ok {
		return a.id, true
	}
	if t.all != nil {
		id, ok := t.all[s]
		return id, ok
	}
	if raw, ok := unmapBytes(s); ok {
		if id, ok := t.vocab[string(raw)]; ok && t.text[id] == s {
			return id, true
		}
	}
	return -1, false
}

// BOS returns the beginning-of-sequence id, if the vocabulary names one.
// Encode never adds it; see AddBOS.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.bos >= 0 }

// EOS returns the end-of-sequence id, if the vocabulary names one.
func (t *Tokenizer) EOS() (int32, bool) { return t.eos, t.eos >= 0 }

// AddBOS reports whether the model expects BOS before a prompt (GGUF
// tokenizer.ggml.add_bos_token, with llama.cpp's defaults: on for Llama 3,
// SentencePiece, WordPiece and Gemma 4, off for the other byte-level BPE
// vocabularies). SmolLM3 does not. Tokenize adds it.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether the model expects EOS after a prompt (GGUF
// tokenizer.ggml.add_eos_token; rare). Tokenize adds it.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// Model names the tokenization algorithm, as GGUF's tokenizer.ggml.model
// does: "gpt2" (byte-level BPE), "llama" (SentencePiece), "gemma4" (Gemma
// 4's BPE) or "bert" (WordPiece).
func (t *Tokenizer) Model() string { return t.model }

// Tokenize is llama.cpp's llama_tokenize(text, addSpecial, parseSpecial):
// Encode(text, parseSpecial), with, when addSpecial is set, the tokens the
// vocabulary puts around a prompt: BOS first if AddBOS, EOS last if AddEOS;
// for WordPiece always the classifier token first and the separator last
// ([CLS] ... [SEP]), whatever add_bos_token says, as llama.cpp does. A text
// that already starts with BOS gets a second one, as in llama.cpp.
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	dst := make([]int32, 0, len(text)/3+3)
	if addSpecial && t.bos >= 0 && (t.addBOS || t.kind == wordPiece) {
		dst = append(dst, t.bos)
	}
	dst = t.AppendEncode(dst, text, parseSpecial)
	if addSpecial {
		switch {
		case t.kind == wordPiece:
			if t.sep >= 0 {
				dst = append(dst, t.sep)
			}
		case t.addEOS && t.eos >= 0:
			dst = append(dst, t.eos)
		}
	}
	return dst
}

// EndOfGeneration returns the sorted ids that end a generated turn, as
// llama.cpp chooses them: EOS, EOT, EOM, the fill-in-the-middle pad, repo
// and file-separator tokens, and every token named like an end of turn
// (<|im_end|>, <|eot_id|>, <|eom_id|>, <|end_of_text|>, <|endoftext|>,
// <|end|>, <end_of_turn>, <eos>, <turn|>, </s>, ...), less llama.cpp's
// exceptions (GPT-OSS's <|end|>, Gemma 4's </s>).
func (t *Tokenizer) EndOfGeneration() []int32 { return slices.Clone(t.eog) }

// IsEndOfGeneration reports whether id ends a generated turn.
func (t *Tokenizer) IsEndOfGeneration(id int32) bool {
	_, found := slices.BinarySearch(t.eog, id)
	return found
}

// Warnings lists the quirks of the file that FromGGUF passed over as
// llama.cpp does, each with what was done instead: a special-token id
// outside the vocabulary (llama2.c's converter writes 0xFFFFFFFF for the
// ids it has none for), a missing tokenizer.ggml.pre, a token type it does
// not know, an empty token. llama.cpp logs the same cases as warnings; a
// program loading a model should log these. Nil for a clean file.
func (t *Tokenizer) Warnings() []string { return slices.Clone(t.warnings) }

// Pre names the pre-tokenizer (GGUF tokenizer.ggml.pre, "default" when the
// file has none, "gemma4" for Gemma 4, or "llama3" for a tokenizer.json with
// the Llama-3 split pattern). Only byte-level BPE vocabularies use it.
func (t *Tokenizer) Pre() string { return t.pre }

// IgnoreMerges reports whether a pre-token that is itself a vocabulary entry
// is emitted as that entry without running merges.
func (t *Tokenizer) IgnoreMerges() bool { return t.ignoreMerges }

// Encode tokenizes text and returns its ids. With parseSpecial, special
// added tokens written in the text (such as "<|im_end|>") become their ids;
// without it they are tokenized as ordinary text. User-defined added tokens
// (SmolLM3's <think>, <tool_call>, …) are recognised either way. Nothing is
// added: no BOS, no EOS (see Tokenize). Any byte sequence, even invalid
// UTF-8, encodes; for the Llama-3 family it decodes back to the same bytes,
// elsewhere invalid bytes are read as U+FFFD, as llama.cpp reads them.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)/3+1), text, parseSpecial)
}

// AppendEncode is Encode that appends to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, parseSpecial bool) []int32 {
	return t.appendEncode(dst, text, func(int, int) bool { return parseSpecial })
}

// EncodeMarked tokenizes text with special tokens parsed everywhere except
// inside the literal byte ranges ([start, end) pairs), where they are
// ordinary text. It is how a chat prompt keeps its template's markers
// special while a user's message cannot forge them: the text between two
// special tokens is split and merged exactly as Encode would (a literal
// range does not cut a word in two). User-defined added tokens are
// recognised everywhere, as in Encode.
func (t *Tokenizer) EncodeMarked(text string, literal [][2]int) []int32 {
	dst := make([]int32, 0, len(text)/3+1)
	return t.appendEncode(dst, text, func(start, end int) bool {
		for _, r := range literal {
			if start < r[1] && r[0] < end {
				return false
			}
		}
		return true
	})
}

// appendEncode encodes text; special(start, end) says whether a special
// token found at bytes [start, end) of text counts as one.
func (t *Tokenizer) appendEncode(dst []int32, text string, special func(start, end int) bool) []int32 {
	var hot *hotWords
	if t.kind == byteBPE {
		hot, _ = t.hot.Get().(*hotWords)
		if hot == nil {
			hot = new(hotWords)
		}
		defer t.hot.Put(hot)
	}
	if t.llamaAdded {
		afterToken := true // the start of the text counts as after a token
		for _, p := range t.added.partition(text, func(i, l int) bool { return special(i, i+l) }) {
			if p.id >= 0 {
				dst = append(dst, p.id)
				afterToken = true
				continue
			}
			dst = t.appendText(dst, text[p.start:p.end], hot, afterToken)
			afterToken = false
		}
		return dst
	}
	base := 0
	for text != "" {
		pos, n, id := t.added.find(text, func(i, l int) bool { return special(base+i, base+i+l) })
		if pos > 0 {
			dst = t.appendText(dst, text[:pos], hot, false)
		}
		if n == 0 {
			break
		}
		dst = append(dst, id)
		text = text[pos+n:]
		base += pos + n
	}
	return dst
}

// appendText appends the ids of a stretch of text that holds no added
// token. afterToken says that it starts the text or follows an added token
// (SentencePiece then puts a space before it).
func (t *Tokenizer) appendText(dst []int32, seg string, hot *hotWords, afterToken bool) []int32 {
	switch t.kind {
	case charBPE:
		return t.appendCharBPE(dst, seg)
	case sentencePiece:
		return t.appendSPM(dst, seg, t.addSpacePrefix && afterToken)
	case wordPiece:
		return t.appendWPM(dst, seg)
	}
	if t.llamaText {
		seg = llamaSanitize(seg)
	}
	switch len(t.split) {
	case 0: // Llama 3's pattern, as Hugging Face runs it
		for seg != "" {
			k := matchAt(seg, 0)
			dst = t.appendWord(dst, seg[:k], hot)
			seg = seg[k:]
		}
	case 1:
		match := t.split[0]
		for i := 0; i < len(seg); {
			k := match(seg, i)
			dst = t.appendWord(dst, seg[i:i+k], hot)
			i += k
		}
	default:
		splitWith(t.split, seg, func(w string) { dst = t.appendWord(dst, w, hot) })
	}
	return dst
}

// appendWord appends the ids of one pre-token.
func (t *Tokenizer) appendWord(dst []int32, w string, hot *hotWords) []int32 {
	if len(w) == 1 {
		if id := t.byteID[w[0]]; id >= 0 || !t.missingBytes {
			return append(dst, id)
		}
		return dst
	}
	if t.ignoreMerges {
		if len(w) <= 7 {
			k := packShort(w)
			h := (k * 0x9E3779B97F4A7C15) >> (64 - hotBits)
			if hot.keys[h] == k {
				return append(dst, hot.ids[h])
			}
			if id, ok := t.short[k]; ok {
				hot.keys[h], hot.ids[h] = k, id
				return append(dst, id)
			}
		} else {
			k := maphash.String(t.seed, w)
			h := k >> (64 - hotBits)
			if id := hot.longIDs[h]; hot.longKeys[h] == k && t.tokenIs(id, w) {
				return append(dst, id)
			}
			if id, ok := t.vocab[w]; ok {
				hot.longKeys[h], hot.longIDs[h] = k, id
				return append(dst, id)
			}
		}
	}
	if ids, ok := t.cache.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.merge(dst, w)
	if t.missingBytes {
		dst = dropNegative(dst, start)
	}
	t.cache.put(w, dst[start:])
	return dst
}

// dropNegative removes the negative ids from dst[start:].
func dropNegative(dst []int32, start int) []int32 {
	k := start
	for _, id := range dst[start:] {
		if id >= 0 {
			dst[k] = id
			k++
		}
	}
	return dst[:k]
}

// hotWords is a small direct-mapped cache of short words seen recently and
// their ids: prose repeats a few thousand words, and this table (48 KB)
// stays in the CPU cache where the vocabulary maps do not.
type hotWords struct {
	keys [1 << hotBits]uint64 // packShort keys; 0 = empty
	ids  [1 << hotBits]int32
	// Longer words by their hash; a hit is confirmed against the token's bytes.
	longKeys [1 << hotBits]uint64
	longIDs  [1 << hotBits]int32
}

// tokenIs reports whether the bytes of token id are w.
func (t *Tokenizer) tokenIs(id int32, w string) bool {
	return string(t.bytes[t.offs[id]:t.offs[id+1]]) == w
}

const hotBits = 12

// packShort packs a word of at most 7 bytes and its length into one
// integer: most pre-tokens of prose are that short, and a map keyed by
// integers is looked up without touching the key's bytes elsewhere in memory.
func packShort(w string) uint64 {
	k := uint64(len(w)) << 56
	for i := 0; i < len(w); i++ {
		k |= uint64(w[i]) << (8 * i)
	}
	return k
}

// mergeKey packs a pair of ids into a merges key.
func mergeKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// noRank marks a pair without a merge.
const noRank = ^uint32(0)

// rank returns the rank and result of merging l and r.
func (t *Tokenizer) rank(l, r int32) (uint32, int32) {
	if v, ok := t.merges[mergeKey(l, r)]; ok {
		return uint32(v >> 32), int32(uint32(v))
	}
	return noRank, -1
}

// merge runs byte-level BPE over the bytes of w and appends the result.
func (t *Tokenizer) merge(dst []int32, w string) []int32 {
	var buf [longWord]int32
	sym := buf[:0]
	if len(w) > longWord {
		sym = make([]int32, 0, len(w))
	}
	for i := 0; i < len(w); i++ {
		sym = append(sym, t.byteID[w[i]])
	}
	return t.mergeSyms(dst, sym)
}

// mergeLong is merge through the priority queue (for tests: both must agree).
func (t *Tokenizer) mergeLong(dst []int32, w string) []int32 {
	sym := make([]int32, len(w))
	for i := 0; i < len(w); i++ {
		sym[i] = t.byteID[w[i]]
	}
	return t.mergeSymsLong(dst, sym)
}

// mergeSyms runs BPE over the symbols sym (token ids; a negative one never
// merges) and appends the result: repeatedly merge the adjacent pair with
// the lowest rank, the leftmost one when it occurs more than once, until no
// pair has a rank. sym is overwritten.
func (t *Tokenizer) mergeSyms(dst []int32, sym []int32) []int32 {
	n := len(sym)
	if n > longWord {
		return t.mergeSymsLong(dst, sym)
	}
	if n < 2 {
		return append(dst, sym...)
	}
	var rankBuf [longWord]uint32
	var resBuf [longWord]int32
	ranks, res := rankBuf[:n-1], resBuf[:n-1]
	for i := 0; i < n-1; i++ {
		ranks[i], res[i] = t.rank(sym[i], sym[i+1])
	}
	for n > 1 {
		best, at := noRank, -1
		for i, r := range ranks[:n-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		sym[at] = res[at]
		copy(sym[at+1:], sym[at+2:n])
		copy(ranks[at:], ranks[at+1:n-1])
		copy(res[at:], res[at+1:n-1])
		n--
		if at > 0 {
			ranks[at-1], res[at-1] = t.rank(sym[at-1], sym[at])
		}
		if at < n-1 {
			ranks[at], res[at] = t.rank(sym[at], sym[at+1])
		}
	}
	return append(dst, sym[:n]...)
}

// longWord is the length above which mergeSyms switches from rescanning an
// array to a priority queue (same result, O(n log n)).
const longWord = 128

// mergeSymsLong is mergeSyms for long pieces: a linked list of symbols and a
// heap of candidate pairs ordered by (rank, position), so that ties go to
// the leftmost pair exactly as in mergeSyms.
func (t *Tokenizer) mergeSymsLong(dst []int32, sym []int32) []int32 {
	n := len(sym)
	if n == 0 {
		return dst
	}
	nxt := make([]int32, n)
	prv := make([]int32, n)
	for i := range n {
		nxt[i], prv[i] = int32(i+1), int32(i-1)
	}
	nxt[n-1] = -1
	h := pairHeap{}
	push := func(i int32) {
		j := nxt[i]
		if j < 0 {
			return
		}
		if r, m := t.rank(sym[i], sym[j]); r != noRank {
			h.push(pair{rank: r, pos: i, right: j, l: sym[i], r: sym[j], merged: m})
		}
	}
	for i := range int32(n - 1) {
		push(i)
	}
	dead := make([]bool, n)
	for h.len() > 0 {
		p := h.pop()
		if dead[p.pos] || dead[p.right] || sym[p.pos] != p.l || nxt[p.pos] != p.right || sym[p.right] != p.r {
			continue // stale: one side was merged since
		}
		sym[p.pos] = p.merged
		dead[p.right] = true
		nn := nxt[p.right]
		nxt[p.pos] = nn
		if nn >= 0 {
			prv[nn] = p.pos
		}
		if q := prv[p.pos]; q >= 0 {
			push(q)
		}
		push(p.pos)
	}
	for i := int32(0); i >= 0; i = nxt[i] {
		dst = append(dst, sym[i])
	}
	return dst
}

type pair struct {
	rank         uint32
	pos, right   int32
	l, r, merged int32
}

// pairHeap is a binary min-heap of pairs by (rank, pos).
type pairHeap struct{ a []pair }

func (h *pairHeap) len() int { return len(h.a) }

func less(x, y pair) bool { return x.rank < y.rank || x.rank == y.rank && x.pos < y.pos }

func (h *pairHeap) push(p pair) {
	h.a = append(h.a, p)
	i := len(h.a) - 1
	for i > 0 {
		j := (i - 1) / 2
		if !less(h.a[i], h.a[j]) {
			break
		}
		h.a[i], h.a[j] = h.a[j], h.a[i]
		i = j
	}
}

func (h *pairHeap) pop() pair {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < last && less(h.a[l], h.a[m]) {
			m = l
		}
		if r := l + 1; r < last && less(h.a[r], h.a[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.a[i], h.a[m] = h.a[m], h.a[i]
		i = m
	}
	return top
}

// wordCache remembers the ids of pre-tokens that needed merges. It is
// bounded: when full it starts over.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int32
}

const cacheMax = 1 << 16

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

// getBytes is get for a word held in a byte slice (no copy is made).
func (c *wordCache) getBytes(w []byte) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.m[string(w)]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) > 64 {
		return
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMax {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[strings.Clone(w)] = slices.Clone(ids)
	c.mu.Unlock()
}
