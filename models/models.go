// Package models registers every model family smolgo runs, so a program
// that opens any supported file imports it once, for its side effect:
//
//	import _ "github.com/smolgo/smolgo/models"
//
//	m, err := family.Load("Qwen3-1.7B-Q4_K_M.gguf") // or engine.Open
//
// The families and their general.architecture names:
//
//	smollm3  SmolLM3 (package smollm3)
//	llama    Llama 3.x, SmolLM2 and other plain llama files (package models/llamaarch)
//	qwen2    Qwen2 and Qwen2.5 (package qwen2)
//	qwen3    Qwen3 (package qwen3)
//	gemma3   Gemma 3 (package gemma3)
//	granite  Granite 3.x and dense Granite 4.0 (package granite)
//	granitehybrid  Granite 4.0-H: Mamba-2 and attention, dense or with experts (package granitehybrid)
//	phi3     Phi-4-mini and Phi-3.5-mini (package phi3)
//	bert     BERT encoders for embeddings and reranking: bge, all-MiniLM (package bert; engine.Open only, family.Load is for the decoders)
//
// A file of any other architecture is refused with an error that names it
// and lists these (family.Families).
package models

import (
	_ "github.com/smolgo/smolgo/models/bert"
	_ "github.com/smolgo/smolgo/models/gemma3"
	_ "github.com/smolgo/smolgo/models/gptoss"
	_ "github.com/smolgo/smolgo/models/granite"
	_ "github.com/smolgo/smolgo/models/granitehybrid"
	_ "github.com/smolgo/smolgo/models/lfm2"
	_ "github.com/smolgo/smolgo/models/llamaarch"
	_ "github.com/smolgo/smolgo/models/phi3"
	_ "github.com/smolgo/smolgo/models/qwen2"
	_ "github.com/smolgo/smolgo/models/qwen2moe"
	_ "github.com/smolgo/smolgo/models/qwen3"
	_ "github.com/smolgo/smolgo/models/qwen3moe"
	_ "github.com/smolgo/smolgo/smollm3"
)
