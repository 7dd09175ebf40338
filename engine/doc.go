// Package engine runs text generation for any model that can take a forward
// step: it turns a Backend (a model's forward pass over per-sequence KV
// caches) into chat sessions.
//
// This package is being built (issue 18); so far it defines the seam
// between scheduling and computing: Backend, Seq and Cache.
package engine
