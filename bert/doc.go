// Package bert runs BERT encoders (general.architecture "bert": bge-small
// and bge-base, all-MiniLM, and bge-reranker-style cross-encoders) from
// GGUF files on the CPU, in pure Go, giving the embeddings and rank scores
// llama.cpp gives for the same file and tokens.
package bert
