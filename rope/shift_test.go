package rope

import (
	"math"
	"testing"
)

// Rotating for position p and then by ShiftAngles(-d) lands where rotating
// for p-d does, for every scaling, up to float32 rounding of the angles.
func TestShiftAngles(t *testing.T) {
	cases := []Config{
		{Dims: 8, Base: 10000},
		{Dims: 8, Base: 10000, Layout: NeoX},
		{Dims: 8, Base: 10000, Scaling: Linear, Factor: 4},
		{Dims: 32, Base: 10000, Scaling: YaRN, Factor: 2, OrigContext: 128},
	}
	for _, cfg := range cases {
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		h := cfg.Dims / 2
		cos, sin := make([]float32, h), make([]float32, h)
		for _, pd := range [][2]int{{5, 3}, {100, 37}, {3000, 2000}, {7, 7}} {
			p, d := pd[0], pd[1]
			x := make([]float32, cfg.Dims)
			for i := range x {
				x[i] = float32(i%5) - 1.5
			}
			want := append([]float32(nil), x...)
			cfg.Angles(p, cos, sin)
			cfg.Rotate(x, cos, sin)
			cfg.ShiftAngles(-d, cos, sin)
			cfg.Rotate(x, cos, sin)
			cfg.Angles(p-d, cos, sin)
			cfg.Rotate(want, cos, sin)
			for i := range x {
				// The angle error grows with the position: float32 theta.
				tol := 1e-6 * float64(p+1) * 4
				if math.Abs(float64(x[i]-want[i])) > tol {
					t.Errorf("%+v: position %d shifted by %d: x[%d] = %g, rotating for %d gives %g", cfg, p, -d, i, x[i], p-d, want[i])
				}
			}
		}
	}
}
