// Command logits prints, as JSON, the next-token logits a GGUF model gives
// for a prompt of token ids, so that any engine's numbers can be compared
// with smolgo's.
//
// Usage:
//
//	logits -model FILE -tokens 1,2,3 [-all] [-top K] [-decode N] [-threads N] [-kv f16|f32|q8_0] [-batch N]
//	logits -model FILE -tokens-file ids.txt ...
//	logits -model FILE -text "Hello world" ...
//	logits -model FILE -text "Hello world" -tokenize
//	logits -model TEXT.gguf -mmproj P.gguf -image IMG[,IMG2...] -text 'Look: <__media__> What is it?' [-all] [-top K] [-decode N] ...
//
// -text tokenizes the prompt with the model's own tokenizer as llama.cpp's
// llama_tokenize(add_special=true, parse_special=true) does: special tokens
// such as <|im_start|> are recognised, the chat template is not applied, and
// BOS/EOS (BERT's [CLS] and [SEP]) are added where the vocabulary asks for
// them. -tokenize prints the ids as a JSON array, which -tokens-file reads
// back, and exits without running the model; it needs only the vocabulary,
// so it works on a vocabulary-only GGUF such as llama.cpp's
// models/ggml-vocab-*.gguf, for any vocabulary the tokenizer package reads
// (byte-level BPE, SentencePiece, Gemma 4, WordPiece).
//
// The prompt runs as one batch (prefill; -batch N splits it into
// micro-batches of N tokens, llama.cpp's n_ubatch). By default only the last
// position's logits are printed; -all prints every position. -top K prints
// only the K largest (id, logit) pairs of each row (ids are exact up to 2^24). -decode N then greedily
// decodes N more tokens (argmax, ties to the lowest id), printing each chosen
// token with the logits after it. Output:
//
//	{"positions":[{"pos":0,"logits":[...]} or {"pos":0,"top":[[id,logit],...]}],
//	 "decode":[{"token":id,"logits":[...]} or {"token":id,"top":[...]}]}
//
// A tokens file holds ids separated by commas, spaces or newlines (a JSON
// array works too).
//
// Images in, text out: -image with -mmproj (llama.cpp's vision projector
// file: gemma3, idefics3, qwen2vl_merger or qwen2.5vl_merger) runs a -text
// prompt with an image wherever <__media__> stands, one marker per file of
// -image's comma-separated list, in order, as llama.cpp's mtmd does: the
// prompt is cut into chunks (text runs, tokenized as -text's are, with
// BOS/EOS around the whole prompt where the vocabulary asks; each image as
// its delimiter tokens and runs of embedding rows), every chunk runs in
// one step (an image's rows in place of token embeddings, attending to
// each other both ways for Gemma 3, at M-RoPE (t, y, x) positions for
// Qwen2-VL), then -decode N greedy steps. It prints llamaref mtmd-logits'
// schema (../shared/tools/llamaref/README.md; compare with its
// --add-special, which tokenizes the same way):
//
//	{"engine":"smolgo","mmproj":...,"model":...,"projector_type":...,
//	 "image_size":...,"patch_size":...,"merge":...,"images":[{"nx":W,"ny":H}],"prompt":...,"n_embd":...,"threads":...,
//	 "non_causal_image":bool,"mrope":bool,"n_vocab":...,"kv_type":...,"mode":"greedy",
//	 "chunks":[{"pos0":0,"type":"text","tokens":[...]},
//	           {"pos0":P,"type":"image","n_tokens":R,"n_pos":A,"grid":[W,H],"tile_px":[W,H],"mrope_pos":[[t,y,x],...]}],
//	 "tokens":[ids, -1 for each image row],
//	 "prefill":[{"pos":P,"token":id or -1,"argmax":id,"margin":m,"logits":[...] or "top":[...]}],
//	 "decode":[{"pos":P,"token":id,"argmax":id,"margin":m,"logits":[...]}]}
//
// A row's pos is its chunk's pos0 plus its index in the chunk (an M-RoPE
// image row's own position is in mrope_pos), margin the argmax's lead over
// the runner-up. -all prints every prompt row (image rows included), else
// the last; -top K, -threads (the projector's too) and -kv work as for
// text; -batch N splits each chunk into micro-batches of N rows, but a
// Gemma 3 image chunk must fit one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	_ "github.com/smolgo/smolgo/models" // every model family
	"github.com/smolgo/smolgo/tokenizer"
	"github.com/smolgo/smolgo/vision"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], os.Stdout, log); err != nil && !errors.Is(err, flag.ErrHelp) {
		log.Error("logits failed", "err", err)
		os.Exit(1)
	}
}

// Row is one output row: logits, or the top K pairs.
type Row struct {
	Pos    *int         `json:"pos,omitempty"`
	Token  *int32       `json:"token,omitempty"`
	Logits []float32    `json:"logits,omitempty"`
	Top    [][2]float32 `json:"top,omitempty"`
}

// Output is the JSON document printed.
type Output struct {
	Positions []Row `json:"positions"`
	Decode    []Row `json:"decode,omitempty"`
}

func run(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("logits", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF model `file`")
	tokensFlag := fs.String("tokens", "", "prompt token ids, comma-separated")
	tokensFile := fs.String("tokens-file", "", "`file` of prompt token ids")
	textFlag := fs.String("text", "", "prompt `text`, tokenized with the model's tokenizer")
	tokenize := fs.Bool("tokenize", false, "with -text: print the token ids and exit")
	all := fs.Bool("all", false, "print every position's logits, not only the last")
	top := fs.Int("top", 0, "print only the top `K` (id, logit) pairs per row")
	decode := fs.Int("decode", 0, "greedily decode `N` more tokens")
	threads := fs.Int("threads", 0, "threads (0 = all cores)")
	batch := fs.Int("batch", 0, "prefill in micro-batches of `N` tokens (0 = the whole prompt at once, like the golden reference runs)")
	kv := fs.String("kv", "f16", "KV cache type: f16, f32 or q8_0")
	mmproj := fs.String("mmproj", "", "vision projector GGUF `file` (llama.cpp's mmproj) for -image")
	images := fs.String("image", "", "image `files`, comma-separated, one per "+vision.Marker+" marker of -text (needs -mmproj)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("-model is required")
	}
	given := 0
	for _, f := range []string{*tokensFlag, *tokensFile, *textFlag} {
		if f != "" {
			given++
		}
	}
	if given != 1 {
		return errors.New("give exactly one of -tokens, -tokens-file and -text")
	}
	if *tokenize && *textFlag == "" {
		return errors.New("-tokenize needs -text")
	}
	imageFiles, err := checkImageFlags(*images, *mmproj, *textFlag, *tokenize)
	if err != nil {
		return err
	}
	if *top < 0 || *decode < 0 {
		return errors.New("-top and -decode must not be negative")
	}
	if _, err := backend.ParseKVType(*kv); err != nil {
		return fmt.Errorf("-kv: %w", err)
	}
	if *batch < 0 {
		return errors.New("-batch must not be negative")
	}
	if *batch == 0 {
		*batch = math.MaxInt32 // one pass for the whole prompt
	}
	if imageFiles != nil {
		return runImages(ctx, imageRun{model: *model, mmproj: *mmproj, prompt: *textFlag, images: imageFiles,
			all: *all, top: *top, decode: *decode, threads: *threads, batch: *batch, kv: *kv}, stdout, log)
	}
	var tokens []int32
	if *textFlag != "" {
		tok, err := tokenizer.LoadGGUF(*model)
		if err != nil {
			return err
		}
		tokens = tok.Tokenize(*textFlag, true, true)
		if *tokenize {
			return json.NewEncoder(stdout).Encode(tokens)
		}
		if len(tokens) == 0 {
			return errors.New("-text gives no tokens")
		}
		log.Info("tokenized", "tokens", len(tokens))
	} else {
		text := *tokensFlag
		if *tokensFile != "" {
			b, err := os.ReadFile(*tokensFile)
			if err != nil {
				return err
			}
			text = string(b)
		}
		var err error
		if tokens, err = parseTokens(text); err != nil {
			return err
		}
	}
	em, err := engine.Open(*model, engine.WithThreads(*threads), engine.WithKVType(*kv),
		engine.WithBatchSize(*batch), engine.WithLogger(log))
	if err != nil {
		return err
	}
	defer em.Close()
	m, ok := family.Of(em) // the runner underneath: logits without sessions
	if !ok {
		return fmt.Errorf("%s: not a llama family's model (an encoder has no logits)", *model)
	}
	cfg := m.CPU().Config
	log.Info("model loaded", "file", *model, "arch", cfg.Arch, "layers", cfg.Layers, "vocab", cfg.Vocab, "threads", m.CPU().Threads())
	cache, err := m.NewCache()
	if err != nil {
		return err
	}
	row := func(logits []float32) Row {
		if *top > 0 {
			return Row{Top: topK(logits, *top)}
		}
		return Row{Logits: append([]float32(nil), logits...)}
	}

	var out Output
	start := time.Now()
	logits, err := m.Forward(ctx, cache, tokens, 0, *all)
	if err != nil {
		return err
	}
	log.Info("prefill", "tokens", len(tokens), "seconds", time.Since(start).Seconds())
	V := cfg.Vocab
	first := len(tokens) - len(logits)/V
	for i := 0; i*V < len(logits); i++ {
		r := row(logits[i*V : (i+1)*V])
		pos := first + i
		r.Pos = &pos
		out.Positions = append(out.Positions, r)
	}
	last := append([]float32(nil), logits[len(logits)-V:]...)
	start = time.Now()
	for k := range *decode {
		tok := int32(argmax(last))
		logits, err := m.Forward(ctx, cache, []int32{tok}, cache.Len(), false)
		if err != nil {
			return fmt.Errorf("decode step %d: %w", k, err)
		}
		r := row(logits)
		r.Token = &tok
		out.Decode = append(out.Decode, r)
		copy(last, logits)
		if (k+1)%64 == 0 {
			log.Info("decoding", "steps", k+1, "of", *decode)
		}
	}
	if *decode > 0 {
		sec := time.Since(start).Seconds()
		log.Info("decode", "tokens", *decode, "seconds", sec, "tokens_per_sec", float64(*decode)/sec)
	}
	enc := json.NewEncoder(stdout)
	return enc.Encode(out)
}

// parseTokens reads ids separated by commas and/or white space, optionally
// inside [ ].
func parseTokens(s string) ([]int32, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
	if len(fields) == 0 {
		return nil, errors.New("no tokens given")
	}
	ids := make([]int32, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("token %d (%q): not an integer id", i, f)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// topK returns the k largest logits as (id, logit) pairs, largest first,
// ties to the lower id.
func topK(x []float32, k int) [][2]float32 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	k = min(k, len(x))
	out := make([][2]float32, k)
	for i := range k {
		out[i] = [2]float32{float32(idx[i]), x[idx[i]]}
	}
	return out
}
