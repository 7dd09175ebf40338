package tokenizer

// The byte-level alphabet (GPT-2): every byte is written as one printable
// character. Bytes 0x21–0x7E, 0xA1–0xAC and 0xAE–0xFF stand for themselves;
// the other 68 bytes map, in increasing order, to U+0100, U+0101, … U+0143
// (space 0x20 → 'Ġ' U+0120, LF → 'Ċ' U+010A). Vocabulary entries and merges
// are written in this alphabet; this package converts them to raw bytes once
// at load time and works on raw bytes from then on.

// byteRune returns the character that stands for byte b.
func byteRune(b byte) rune {
	switch {
	case b >= 0x21 && b <= 0x7E, b >= 0xA1 && b <= 0xAC, b >= 0xAE:
		return rune(b)
	}
	// Count the remapped bytes below b: 0x00–0x20 (33), 0x7F–0xA0 (34), 0xAD.
	switch {
	case b <= 0x20:
		return 0x100 + rune(b)
	case b <= 0xA0:
		return 0x100 + 33 + rune(b-0x7F)
	default: // 0xAD
		return 0x143
	}
}

// runeByte is the inverse of byteRune: the byte that character r stands for,
// and false when r is not in the alphabet.
func runeByte(r rune) (byte, bool) {
	switch {
	case r >= 0x21 && r <= 0x7E, r >= 0xA1 && r <= 0xAC, r >= 0xAE && r <= 0xFF:
		return byte(r), true
	case r >= 0x100 && r < 0x100+33:
		return byte(r - 0x100), true
	case r >= 0x100+33 && r < 0x100+33+34:
		return byte(r-0x100-33) + 0x7F, true
	case r == 0x143:
		return 0xAD, true
	}
	return 0, false
}

// unmapBytes converts a string in the byte-level alphabet to the raw bytes
// it stands for. ok is false when a character is outside the alphabet.
func unmapBytes(s string) (b []byte, ok bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		c, ok := runeByte(r)
		if !ok {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}

// mapBytes writes raw bytes in the byte-level alphabet (used for tests and
// for showing pre-tokens the way Hugging Face prints them).
func mapBytes(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = byteRune(c)
	}
	return string(r)
}
