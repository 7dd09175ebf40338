// Package smolgo is the root of a pure-Go inference library for the small
// language models people run, stored as GGUF files: SmolLM3, SmolLM2,
// Qwen3, Qwen2.5, Llama 3.2, Gemma 3, Granite and Phi-4-mini; the mixtures
// of experts Qwen3-MoE, gpt-oss, Mixtral, Qwen2-MoE and Granite MoE; the
// hybrids with recurrent layers LFM2, Qwen3.5 and Granite 4.0-H; BERT
// encoders for embeddings and reranking; and images in through llama.cpp's
// vision projectors (package vision).
//
// A Go program imports it to run a quantized model (SmolLM3-3B in Q4_K_M is
// 1.9 GB) on a laptop CPU, stream its text, and separate its reasoning
// (<think>…</think>) from its answer. No cgo, no Python, no downloads at run
// time: the model file is memory-mapped and its weights stay in their
// quantized blocks.
//
// # Layers
//
// The packages are layered strictly upward; none imports a later one
// (layers_test.go holds it with go list):
//
//	gguf      read and write GGUF files (memory-mapped), tensor types
//	quant     block formats: (de)quantization and the dot-product kernels
//	          (Go assembly for amd64 and arm64 with a pure-Go twin)
//	tensor    the ops a transformer needs, the attention and KV-cache
//	          kernels (Go assembly with a pure-Go twin), and the worker
//	          pool that runs them
//	rope      rotary position embeddings: NORM/NEOX, YaRN, NoPE masks
//	backend   the step seam: Backend, Cache, Seq, Encoder (interfaces only)
//	llama     the block, written once: an architecture is data (Arch), each
//	          layer a token mixer and an FFN of named kinds (attention,
//	          short convolution, Gated DeltaNet, Mamba-2; dense GLU, mixture
//	          of experts), weights apart from where they run (Weights), the
//	          CPU runner with its KV cache and recurrent state, and the
//	          device registry
//	cuda      the same block on an NVIDIA GPU (build tag cuda), a device
//	          registered by importing the package
//	family    a model family = a block description + a format, registered
//	          so that engine.Open takes its files
//	models/qwen3, models/qwen2, models/llamaarch, models/gemma3,
//	models/granite, models/phi3, smollm3, models/qwen3moe,
//	models/gptoss, models/qwen2moe, models/lfm2, models/qwen35,
//	models/qwen35moe, models/granitehybrid
//	          the families: each its description and chat format (template,
//	          tokenizer, reasoning, tool calls); llamaarch opens
//	          general.architecture "llama" (Llama 3.x, SmolLM2, Mixtral)
//	vision    llama.cpp's mmproj vision projectors: images to rows of the
//	          text model's input
//	models/bert
//	          BERT encoders for embeddings and reranking (bge, all-MiniLM,
//	          cross-encoders): the CPU encoder the engine's Embed runs
//	models    imports every family, for a program that opens any file
//	server    an OpenAI- and Anthropic-compatible HTTP API and a web chat,
//	          over engine sessions
//
// Beside them, used by the layers above: engine (model-neutral sessions,
// messages, options and events; the continuous-batching scheduler, prompt
// cache, stop strings, constraints and speculation; embeddings and
// reranking; a model plugs in a Backend, or an Encoder, and a Format),
// tokenizer (BPE, SentencePiece and WordPiece read from the GGUF or a
// tokenizer.json), the families' chat packages (smollm3/chat,
// models/qwen3/chat, ...: templates and reasoning parsers), sample
// (samplers), grammar (JSON schema and GBNF constraints) and toolcall (the
// <tool_call> parser).
//
// # The tree
//
// Besides the layers' packages, the root holds models/ (the families, bert,
// and the tests that run every family), smollm3 (the SmolLM3 family),
// examples/ (thin programs on top: webchat, chat in the terminal, tools,
// logits, bench, ggufinfo, and embed for semantic search over a folder),
// docs/ (measurements and their method), testdata/ (the tiny demo model),
// deploy/ (Kubernetes manifests) and internal/ (what the packages and their
// tests share: synth writes random-weight models of every family, goldentest
// and sharedtest read llama.cpp's references, chatfmt holds the chat
// packages' common parts).
//
// # Using it
//
// A sketch of a whole program (see the smollm3 and engine packages for
// runnable examples); engine.Open is the one way to open a model file:
//
//	import _ "github.com/smolgo/smolgo/models" // every family
//	m, err := engine.Open("Qwen3-1.7B-Q4_K_M.gguf", engine.WithThreads(4))
//	if err != nil { ... }
//	defer m.Close()
//	s := m.NewSession()
//	msgs := []engine.Message{{Role: "user", Content: "Why is the sky blue?"}}
//	for ev, err := range s.Generate(ctx, msgs, engine.GenerateOptions{MaxTokens: 256}) {
//		if err != nil { ... }
//		switch ev.Kind {
//		case engine.EventReasoning: // the model's <think> text
//		case engine.EventContent:   fmt.Print(ev.Text)
//		case engine.EventDone:      fmt.Println(ev.Stats)
//		}
//	}
package smolgo
