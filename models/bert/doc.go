// Package bert runs BERT encoders (general.architecture "bert": bge-small
// and bge-base, all-MiniLM, and bge-reranker-style cross-encoders) from
// GGUF files on the CPU, in pure Go, giving the embeddings and rank scores
// llama.cpp gives for the same file and tokens.
//
// # Using it
//
// Importing the package (or package models, which imports every family)
// registers the architecture, so engine.Open opens BERT files; the engine's
// Embed, EmbedTokens and Rerank do the rest (engine.Model.Encoder is the
// CPU encoder underneath):
//
//	m, err := engine.Open("bge-small-en-v1.5-f16.gguf", engine.WithThreads(4))
//	res, err := m.Embed(ctx, []string{"first text", "second text"}, engine.EmbedOptions{Normalize: true})
//	// res.Vectors[i] is 384 floats of unit length; a dot product is the cosine
//	r, err := reranker.Rerank(ctx, "query", docs, engine.RerankOptions{}) // a file with pooling_type rank
//
// The file's pooling_type decides what a sequence becomes: mean (the mean
// of its tokens' final hidden states: all-MiniLM), cls (the first token's:
// bge), last, or rank (a reranker: the first token through the
// classification head cls, tanh, cls.output, one score per label).
// engine.WithPooling overrides it. Texts become [CLS] text [SEP] (a
// reranker's input [CLS] query [SEP] document), as llama-server builds them;
// every token has type 0, as in llama.cpp. A file may declare Matryoshka
// widths (engine.MatryoshkaKey) to allow EmbedOptions.Dimensions.
//
// The tokenizer is read from the file (tokenizer.FromGGUF); real BERT files
// carry a WordPiece vocabulary (tokenizer.ggml.model "bert"), which package
// tokenizer must implement for text inputs. Token ids (EmbedTokens) need no
// tokenizer.
//
// # The pass
//
// Encoder runs one forward pass over many whole sequences at once: their
// rows are stacked and every product (Q, K and V fused into one, the
// attention output, the feed-forward's two) runs over all of them, so each
// weight is read once per pass; attention stays inside each sequence (a
// sequence never sees another), one head of one sequence per task on the
// thread pool (tensor.FullAttention). Embeddings are batch-invariant: a
// sequence's vector is bit for bit the same alone and in any pass, in any
// place (TestBatchInvariance). The last layer computes only the rows its
// pooling reads (one for CLS, last and rank), as llama.cpp's graph does.
//
// F32 and F16 matrices are copied at load into the slab layout of the
// float GEMM (tensor.Packed: a 32-row × 12-token AVX-512 micro-kernel that
// reads each weight once per 12 tokens, 230-270 GFLOP/s on one Zen 5 core;
// an AVX2 form at about half that), and the file's pages of them are
// dropped; Options.KeepLayout keeps
// Matrix.Mul's kernels instead. Quantized matrices (Q8_0, Q4_K, ...) run
// through tensor.Matrix.Mul (quant's GEMM for K-quants). Bias adds and
// GELU run inside the products, on the thread that wrote the outputs.
//
// # Numerics
//
// The graph and its rounding are llama.cpp's (src/models/bert.cpp,
// build_pooling in src/llama-graph.cpp): LayerNorm as ggml_norm (sums in
// float64, then the weight and bias), GELU from ggml's float16 table,
// activations rounded to F16 before products with F16 weights (its vec-dot
// type), keys and values rounded to float16 as llama.cpp's flash attention
// casts an encoder's, scores and sums in float32. Against llama.cpp's
// golden outputs (../shared/golden-families/embeddings) the F32 models agree
// to cosine 1 - 1e-9 and max |Δ| 3.1e-5 (the tolerance is 0.99999 and
// 1e-4); docs/embeddings.md has the quantized files' agreement and the
// speed against llama.cpp.
package bert
