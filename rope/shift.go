package rope

// ShiftAngles writes the cos and sin of the rotation that moves a vector
// already rotated for position p to position p+delta: Angles(delta) without
// the magnitude factors (the attention factor and YaRN's mscale), which the
// vector carries once already. Every scaling here (none, linear, YaRN) turns
// pair i by an angle proportional to the position, so rotating by the
// angles of delta adds exactly delta positions, up to float32 rounding of
// the angles.
//
// It is what shifting a KV cache needs: when the oldest positions are
// dropped, the cached keys of RoPE layers are rotated by -dropped.
func (c Config) ShiftAngles(delta int, cos, sin []float32) {
	p := c.params()
	p.unit = true
	p.angles(delta, cos[:c.Dims/2], sin[:c.Dims/2])
}
