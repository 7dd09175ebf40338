package llama

// gdnScratch is the work area of the Gated DeltaNet layers (kind_deltanet.go)
// and of Qwen3.5's gated attention, grown to the largest pass.
type gdnScratch struct {
	qg []float32 // Attention.QueryGate: each row's queries and gates, head by head [rows × 2·QDim]
}
