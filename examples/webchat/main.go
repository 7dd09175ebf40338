// Command webchat serves a chat page and an OpenAI-compatible API for a
// SmolLM3 (or other llama-family) GGUF model, on this machine:
//
//	go run ./examples/webchat -model SmolLM3-3B-Q4_K_M.gguf
//
// then open http://127.0.0.1:8080. The same address answers OpenAI clients
// at /v1 (POST /v1/chat/completions, GET /v1/models) and GET /health; see
// package server. A BERT file (an embedding model such as bge-small, or a
// reranker) is served at POST /v1/embeddings (or /v1/rerank) instead.
//
// Without -model it runs the tiny random-weight demo model from the
// repository's testdata/ if it is there (it produces gibberish, but shows
// the whole app working), and otherwise explains where to get a real model.
// -fake serves a deterministic echo engine instead of a model, for trying
// the page and for load tests.
//
// Several models in one process: -models-dir DIR serves every supported
// GGUF file in DIR, and each folder in DIR as one model with its vision
// projector (*mmproj*.gguf) or draft model (draft-*.gguf) beside it
// (models.go); -model NAME=FILE (repeated) names more; the
// request's "model" field picks one, each loads on its first request and
// unloads after -models-ttl idle or when -models-mem needs room, and -pin
// keeps some loaded (models.go, server.Router); -models-preset FILE gives
// models their own options, as llama-server's INI presets (preset.go):
//
//	go run ./examples/webchat -models-dir ~/models -models-mem 8000000000 -pin bge-small-en-v1.5-f16
//
// Ctrl-C or SIGTERM drains: new requests get 503, running answers get
// -drain-timeout to finish. While the model loads, /health answers 503.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// demoModel is the tiny random-weight SmolLM3 shipped in testdata/.
const demoModel = "testdata/smollm3-tinyq-Q4_K_M.gguf"

const getModel = `No model given. webchat needs a SmolLM3 GGUF file:

  1. Download one, e.g. SmolLM3-3B-Q4_K_M.gguf (about 1.9 GB) from the
     ggml-org/SmolLM3-3B-GGUF repository on Hugging Face:
       https://huggingface.co/ggml-org/SmolLM3-3B-GGUF
  2. Run:
       go run ./examples/webchat -model SmolLM3-3B-Q4_K_M.gguf
     and open http://127.0.0.1:8080

To see the app work without a download, run it from the repository root,
where it finds the tiny random-weight demo model in testdata/ (its answers
are gibberish):
       go run ./examples/webchat -model ` + demoModel + `
or try the page with a fake echo engine:
       go run ./examples/webchat -fake
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webchat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var models modelFlag
	fs.Var(&models, "model", "GGUF model `file` (default: the demo model in "+demoModel+" if present); repeated, or as NAME=FILE, it serves several models (see -models-dir)")
	modelsDir := fs.String("models-dir", "", "serve every supported GGUF file in this `directory`, and every folder in it as one model (its *.gguf, a projector *mmproj*.gguf, a draft draft-*.gguf), each loaded on its first request; the request's \"model\" picks one")
	presetFile := fs.String("models-preset", "", "INI `file` of per-model options, as llama-server's --models-preset: [*] for every model, [NAME] for one (model, mmproj, model-draft, spec-draft-n-max, spec-draft-n-min, spec-draft-p-min, ctx-size, chat-template-file, load-on-startup); flags given here win")
	pins := fs.String("pin", "", "comma-separated model `names` loaded at start and never unloaded (with -models-dir or several -model)")
	modelsTTL := fs.Duration("models-ttl", 0, "unload a model idle this long (with -models-dir or several -model; 0: never)")
	modelsMem := fs.Int64("models-mem", 0, "memory in `bytes` the loaded models may hold, files and KV caches, least recently used unloaded first (with -models-dir or several -model; 0: no bound)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address` (host:port; port 0 picks a free one)")
	fake := fs.Bool("fake", false, "serve a fake echo engine instead of a model")
	name := fs.String("name", "", "model id reported to clients (default: the file name without .gguf)")
	ctxLen := fs.Int("ctx", 0, "context length in tokens (default: the model's, capped at 8192 to bound memory; more than the model's is allowed, with a warning)")
	threads := fs.Int("threads", runtime.NumCPU(), "threads per generation")
	slots := fs.Int("slots", engine.DefaultMaxSequences, "conversations that generate at once; their tokens share each forward step (continuous batching)")
	queue := fs.Int("queue", 16, "requests that may wait for a slot before the server answers 503")
	sessions := fs.Int("sessions", 32, "web-chat conversations kept on the server (least recently used are evicted)")
	sessionMem := fs.Int64("session-mem", 4<<30, "memory in `bytes` the kept conversations' KV caches may hold")
	mmproj := fs.String("mmproj", "", "vision projector `file` (llama.cpp's mmproj GGUF) of the -model: its chats then take images (data: URLs in image_url parts, Anthropic image blocks); raises the request body limit to 32 MiB")
	templateFile := fs.String("chat-template-file", "", "Jinja chat template `file` that replaces the model file's own (llama-server's --chat-template-file); its reasoning and tool-call markers are read from it")
	perClient := fs.Int("sessions-per-client", 0, "web-chat conversations one client address may keep; its next replaces its oldest (0: a quarter of -sessions, at least 8; -1: no bound, for a server behind a proxy)")
	kv := fs.String("kv", "f16", "KV cache `type`: f16, f32 or q8_0 (q8_0 halves the memory of long contexts)")
	promptCache := fs.Int64("prompt-cache", 512<<20, "memory in `bytes` for prompts shared between requests and conversations (0: off)")
	promptCacheDir := fs.String("prompt-cache-dir", "", "`directory` where the prompt cache's snapshots are also written, so that a restarted server reuses them (needs -prompt-cache)")
	promptCacheDisk := fs.Int64("prompt-cache-disk", engine.DefaultPromptCacheDiskBytes, "disk `bytes` the -prompt-cache-dir files may take per model, least recently used out first")
	device := fs.String("device", "cpu", "where the model runs: cpu, or cuda:N in a build with -tags cuda")
	speculate := fs.Bool("speculate", false, "lookup speculative decoding (drafts copied from the conversation; same answers, faster on repetitive text)")
	draftModel := fs.String("draft-model", "", "GGUF `file` of a smaller model of the same vocabulary that drafts tokens for -model to check (speculative decoding, llama-server's -md; same answers, faster where the two agree)")
	mtp := fs.Bool("mtp", false, "draft with the model's own multi-token-prediction block (a Qwen3.5 file with nextn_predict_layers; speculative decoding with no second file), -draft-max tokens per step")
	draftMax := fs.Int("draft-max", engine.DefaultDraftMax, "with a draft model or -mtp: the most tokens drafted per step (llama-server's --draft-max)")
	draftMin := fs.Int("draft-min", 0, "with a draft model: drafts shorter than this are dropped (llama-server's --draft-min)")
	draftPMin := fs.Float64("draft-p-min", 0, "with a draft model: a draft stops before a token the draft model gives less than this probability (llama-server's --draft-p-min)")
	maxTokens := fs.Int("max-tokens", 2048, "answer length cap for requests that give no max_tokens (0: up to the context)")
	trustSpecial := fs.Bool("trust-special-tokens", false, "tokenize special tokens typed in messages (<|im_end|>) as control tokens; only for trusted clients")
	aliases := fs.String("model-alias", "", "comma-separated other model `names` requests may use; with it set, others get 404 (default: any name is the model)")
	corsOrigins := fs.String("cors-origin", "", "comma-separated web `origins` (https://app.example, or \"*\") whose pages may call the API from a browser; others are refused")
	readTimeout := fs.Duration("read-timeout", 60*time.Second, "time a client has to send a whole request, body included")
	storedResponses := fs.Int("stored-responses", 256, "responses kept for previous_response_id on /v1/responses (-1: none)")
	replica := fs.String("replica-id", "", "this replica's `name` in the X-Smolgo-Replica header of every response (default: the host name; \"-\": none)")
	drain := fs.Duration("drain-timeout", 10*time.Second, "on SIGTERM or Ctrl-C, how long running answers may take to finish while new requests get 503")
	verbose := fs.Bool("v", false, "debug logging")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: webchat [-model FILE | -models-dir DIR | -model NAME=FILE ...] [-addr HOST:PORT] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	flagSet := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { flagSet[f.Name] = true })
	if routerMode(models, *modelsDir) || *presetFile != "" { // several models: models.go
		scfg := server.Config{Slots: *slots, MaxQueue: *queue, MaxSessions: *sessions, MaxSessionsPerClient: *perClient,
			MaxSessionBytes: *sessionMem, Logger: log, Sampler: sample.SmolLM3Defaults(), DefaultMaxTokens: *maxTokens,
			ParseSpecialTokens: *trustSpecial, CORSOrigins: splitList(*corsOrigins), ReadTimeout: *readTimeout,
			MaxStoredResponses: *storedResponses, ReplicaID: *replica, ShutdownGrace: *drain}
		if *fake {
			fmt.Fprintln(stderr, "webchat: -fake serves one echo engine; it does not combine with -models-dir or several -model")
			return 2
		}
		if _, err := backend.ParseKVType(*kv); err != nil {
			fmt.Fprintf(stderr, "webchat: -kv: %v\n", err)
			return 2
		}
		if *templateFile != "" {
			fmt.Fprintln(stderr, "webchat: -chat-template-file is for one model (-model FILE)")
			return 2
		}
		if *mmproj != "" || *draftModel != "" || *mtp {
			fmt.Fprintln(stderr, "webchat: -mmproj, -draft-model and -mtp are for one model (-model FILE); with several, put a model's projector (*mmproj*.gguf) or draft (draft-*.gguf) beside it in its own folder (see -models-dir)")
			return 2
		}
		return serveModels(ctx, log, stdout, stderr, *addr, models, *modelsDir, splitList(*pins),
			server.RouterConfig{Server: scfg, IdleTTL: *modelsTTL, MaxBytes: *modelsMem},
			loadSettings{ctxLen: *ctxLen, threads: *threads, opts: []engine.Option{engine.WithKVType(*kv),
				engine.WithPromptCache(*promptCache), engine.WithMaxSequences(*slots), engine.WithDevice(*device),
				engine.WithSpeculation(*speculate), engine.WithPromptCacheDir(*promptCacheDir, *promptCacheDisk)},
				draft: draftSettings{max: *draftMax, min: *draftMin, pMin: *draftPMin,
					opts: []engine.Option{engine.WithKVType(*kv), engine.WithMaxSequences(*slots), engine.WithDevice(*device)}},
				preset: *presetFile, flagSet: flagSet})
	}

	// Listen first: while the model loads, /health answers 503 "Loading
	// model" and /livez 200, as orchestrators and clients expect.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	defer ln.Close()
	stopLoading := server.ServeLoading(ln, log)
	defer stopLoading()

	var eng server.Engine
	demo := false
	switch {
	case *fake:
		eng = &servertest.Engine{Name: "fake-echo", TokenDelay: 30 * time.Millisecond, Context: *ctxLen}
		fmt.Fprintln(stdout, "Serving the fake echo engine (no model): it echoes your messages.")
	default:
		var path string
		if len(models) == 1 {
			path = models[0]
		}
		if path == "" {
			if _, err := os.Stat(demoModel); err != nil {
				fmt.Fprint(stderr, getModel)
				return 2
			}
			path, demo = demoModel, true
			fmt.Fprintln(stdout, "Note: no -model given; running the tiny random-weight demo model "+demoModel+
				".\nIts answers are gibberish; it shows the app working. See -h for getting a real model.")
		}
		id := *name
		if id == "" {
			id = filepath.Base(path)
			id = id[:len(id)-len(filepath.Ext(id))]
		}
		if _, err := backend.ParseKVType(*kv); err != nil {
			fmt.Fprintf(stderr, "webchat: -kv: %v\n", err)
			return 2
		}
		opts := []engine.Option{engine.WithKVType(*kv), engine.WithPromptCache(*promptCache), engine.WithMaxSequences(*slots),
			engine.WithDevice(*device), engine.WithSpeculation(*speculate), engine.WithPromptCacheDir(*promptCacheDir, *promptCacheDisk)}
		if *templateFile != "" {
			src, err := os.ReadFile(*templateFile)
			if err != nil {
				fmt.Fprintf(stderr, "webchat: -chat-template-file: %v\n", err)
				return 2
			}
			opts = append(opts, engine.WithChatTemplate(string(src)))
		}
		if *mmproj != "" {
			opts = append(opts, engine.WithProjector(*mmproj))
		}
		if *draftModel != "" && *mtp {
			fmt.Fprintln(stderr, "webchat: -draft-model and -mtp: choose one drafter")
			return 2
		}
		draft := draftSettings{path: *draftModel, mtp: *mtp, max: *draftMax, min: *draftMin, pMin: *draftPMin,
			opts: []engine.Option{engine.WithKVType(*kv), engine.WithMaxSequences(*slots), engine.WithDevice(*device)}}
		e, closeModel, err := loadModel(ctx, log, stdout, path, id, *ctxLen, *threads, draft, opts...)
		if err != nil {
			fmt.Fprintf(stderr, "webchat: %v\n", err)
			return 1
		}
		defer closeModel()
		eng = e
	}

	stopLoading()
	fmt.Fprintf(stdout, "Chat with %s at http://%s/  (OpenAI API at http://%s/v1; Ctrl-C to stop)\n",
		eng.ModelName(), ln.Addr(), ln.Addr())
	var maxBody int64 // the server's default
	if *mmproj != "" {
		maxBody = visionBodyBytes
	}
	srv := server.New(eng, server.Config{Slots: *slots, MaxBodyBytes: maxBody, MaxQueue: *queue, MaxSessions: *sessions, MaxSessionsPerClient: *perClient,
		MaxSessionBytes: *sessionMem, Logger: log, Sampler: sample.SmolLM3Defaults(), DefaultMaxTokens: *maxTokens,
		ParseSpecialTokens: *trustSpecial, ModelAliases: splitList(*aliases), Demo: demo,
		CORSOrigins: splitList(*corsOrigins), ReadTimeout: *readTimeout, MaxStoredResponses: *storedResponses,
		ReplicaID: *replica, ShutdownGrace: *drain})
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	return 0
}

// visionBodyBytes is the request body limit of a server with a vision
// model: images come inline, base64.
const visionBodyBytes = 32 << 20

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
