package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// fingerprintSample is the bytes read from the start, middle and end of
// each tensor for Fingerprint.
const fingerprintSample = 256

// Fingerprint identifies the file's contents: the SHA-256, in hex, of its
// header (the metadata and tensor directory, byte for byte), its length,
// and samples of every tensor's data (the first, middle and last 256 bytes).
// Two files with the same weights have the same fingerprint wherever they
// live and whatever they are called; another quantization, another
// fine-tune or an edited tokenizer gives another. It reads well under a
// megabyte, so it is cheap even for a file of many gigabytes (a full hash
// would read them all).
//
// What it is for: a cache of computed state (package engine's prompt cache
// on disk) is only valid for the weights that computed it, and checks this
// identity before it uses a file.
func (f *File) Fingerprint() string {
	h := sha256.New()
	head := f.data[:min(f.DataOffset, uint64(len(f.data)))]
	binary.Write(h, binary.LittleEndian, uint64(len(f.data)))
	h.Write(head)
	for i := range f.Tensors {
		b := f.TensorData(&f.Tensors[i])
		n := min(len(b), fingerprintSample)
		mid := (len(b) - n) / 2
		h.Write(b[:n])
		h.Write(b[mid : mid+n])
		h.Write(b[len(b)-n:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
