// Package models registers every model family smolgo runs, so a program
// that opens any supported file imports it once, for its side effect:
//
//	import _ "github.com/smolgo/smolgo/models"
//
//	m, err := engine.Open("Qwen3-1.7B-Q4_K_M.gguf")
//
// The families and their general.architecture names:
//
//	smollm3     SmolLM3 (package smollm3)
//	llama       Llama 3.x, SmolLM2, Mixtral-style experts and other llama files (package models/llamaarch)
//	qwen2       Qwen2 and Qwen2.5 (package models/qwen2)
//	qwen2moe    Qwen2-MoE (package models/qwen2moe)
//	qwen3       Qwen3 (package models/qwen3)
//	qwen3moe    Qwen3-30B-A3B, Qwen3-Coder-30B-A3B (package models/qwen3moe)
//	qwen35      Qwen3.5 0.8B to 9B, Gated DeltaNet and gated attention (package models/qwen35)
//	qwen35moe   Qwen3.5/3.6-35B-A3B, Qwen3.5's hybrid with experts (package models/qwen35moe)
//	gpt-oss     gpt-oss-20b and -120b (package models/gptoss)
//	gemma3      Gemma 3 (package models/gemma3)
//	granite     Granite 3.x and dense Granite 4.0 (package models/granite)
//	granitemoe  Granite 3.x mixtures of experts (package models/granite)
//	granitehybrid  Granite 4.0-H: Mamba-2 and attention, dense or with experts (package models/granitehybrid)
//	phi3        Phi-4-mini and Phi-3.5-mini (package models/phi3)
//	lfm2        LFM2 and LFM2.5, short convolutions and attention (package models/lfm2)
//	lfm2moe     LFM2-8B-A1B, LFM2's hybrid with experts (package models/lfm2)
//	bert        BERT encoders for embeddings and reranking: bge, all-MiniLM (package models/bert)
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
	_ "github.com/smolgo/smolgo/models/qwen35"
	_ "github.com/smolgo/smolgo/models/qwen35moe"
	_ "github.com/smolgo/smolgo/models/qwen3moe"
	_ "github.com/smolgo/smolgo/smollm3"
	_ "github.com/smolgo/smolgo/vision" // vision projectors (engine.WithProjector)
)
