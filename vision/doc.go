// Package vision runs llama.cpp's vision projectors ("mmproj" GGUF files):
// it decodes an image (package pixels), preprocesses it as llama.cpp's mtmd
// does for the projector's type, and encodes it into rows of the text
// model's embedding width, which the text model reads in place of token
// embeddings.
//
// The types (clip.projector_type) are gemma3 (SigLIP, average pool,
// soft-embedding norm, projection), idefics3 (SmolVLM: SigLIP on tiles and an
// overview, pixel shuffle, projection), qwen2vl_merger (Qwen2-VL: a pair of
// patch kernels, a ViT with 2-D rotary positions, a 2 × 2 merger MLP) and
// qwen2.5vl_merger (Qwen2.5-VL: as Qwen2-VL with RMSNorm, SwiGLU and window
// attention). Open refuses other types by name.
//
// Importing the package registers its loader with package engine
// (engine.WithProjector).
package vision
