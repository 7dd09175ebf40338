package rope

import (
	"math"
	"slices"
	"testing"
)

func TestRotateMatchesClosedForm(t *testing.T) {
	for _, layout := range []Layout{Norm, NeoX} {
		cfg := Config{Dims: 8, Base: 10000, Layout: layout}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int{0, 1, 7, 1000} {
			x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} // 2 extra dims stay put
			orig := append([]float32(nil), x...)
			cos, sin := make([]float32, 4), make([]float32, 4)
			cfg.Angles(pos, cos, sin)
			cfg.Rotate(x, cos, sin)
			for i := range 4 {
				theta := float64(pos) * math.Pow(10000, -2*float64(i)/8)
				a, b := 2*i, 2*i+1
				if layout == NeoX {
					a, b = i, i+4
				}
				wantA := float64(orig[a])*math.Cos(theta) - float64(orig[b])*math.Sin(theta)
				wantB := float64(orig[a])*math.Sin(theta) + float64(orig[b])*math.Cos(theta)
				// The running float32 product of theta loses a few ulps of
				// the angle; at pos 1000 that is ~1e-4 rad.
				tol := 1e-5 + 2e-7*float64(pos)*10
				if math.Abs(float64(x[a])-wantA) > tol || math.Abs(float64(x[b])-wantB) > tol {
					t.Errorf("%v pos %d pair %d: got (%v, %v), want (%v, %v)", layout, pos, i, x[a], x[b], wantA, wantB)
				}
			}
			if x[8] != 9 || x[9] != 10 {
				t.Errorf("%v: dims past Dims changed: %v", layout, x[8:])
			}
		}
	}
}

func TestPositionZeroIsIdentity(t *testing.T) {
	cfg := Config{Dims: 4, Base: 500000}
	x := []float32{0.1, -0.2, 0.3, -0.4}
	cos, sin := make([]float32, 2), make([]float32, 2)
	cfg.Angles(0, cos, sin)
	y := append([]float32(nil), x...)
	cfg.Rotate(y, cos, sin)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("pos 0 rotated %v to %v", x, y)
		}
	}
}

func TestRunningThetaProduct(t *testing.T) {
	// The angle must be the float32 running product, as in ggml, which can
	// differ from a fresh power in the last bits.
	cfg := Config{Dims: 64, Base: 5000000}
	cos, sin := make([]float32, 32), make([]float32, 32)
	pos := 4000
	cfg.Angles(pos, cos, sin)
	scale := float32(math.Pow(5000000, float64(float32(-2.0)/64)))
	theta := float32(pos)
	for i := range 32 {
		if got, want := cos[i], float32(math.Cos(float64(theta))); got != want {
			t.Errorf("pair %d: cos %v, want %v", i, got, want)
		}
		if got, want := sin[i], float32(math.Sin(float64(theta))); got != want {
			t.Errorf("pair %d: sin %v, want %v", i, got, want)
		}
		theta *= scale
	}
}

func TestYaRNTable(t *testing.T) {
	// tinyyarn: dims 32, base 10000, factor 2 over 128 (golden/README.md).
	cfg := Config{Dims: 32, Base: 10000, Scaling: YaRN, Factor: 2, OrigContext: 128}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	lo, hi := CorrDims(32, 128, 10000, 32, 1)
	if lo != 0 || hi != 6 {
		t.Fatalf("corr dims = %v, %v; the README says 0, 6", lo, hi)
	}
	mscale := 1 + 0.1*math.Log(2)
	for _, pos := range []int{0, 1, 50, 200} {
		cos, sin := make([]float32, 16), make([]float32, 16)
		cfg.Angles(pos, cos, sin)
		for i := range 16 {
			extrap := float64(pos) * math.Pow(10000, -2*float64(i)/32)
			r := 1 - math.Min(1, math.Max(0, (float64(i)-0)/6))
			theta := 0.5*extrap*(1-r) + extrap*r
			wc, ws := math.Cos(theta)*mscale, math.Sin(theta)*mscale
			if math.Abs(float64(cos[i])-wc) > 2e-5 || math.Abs(float64(sin[i])-ws) > 2e-5 {
				t.Errorf("pos %d pair %d: (%v, %v), want (%v, %v)", pos, i, cos[i], sin[i], wc, ws)
			}
		}
	}
}

func TestLinearScaling(t *testing.T) {
	lin := Config{Dims: 8, Base: 10000, Scaling: Linear, Factor: 4}
	plain := Config{Dims: 8, Base: 10000}
	c1, s1 := make([]float32, 4), make([]float32, 4)
	c2, s2 := make([]float32, 4), make([]float32, 4)
	lin.Angles(40, c1, s1)
	plain.Angles(10, c2, s2)
	for i := range 4 {
		if math.Abs(float64(c1[i]-c2[i])) > 1e-5 || math.Abs(float64(s1[i]-s2[i])) > 1e-5 {
			t.Errorf("pair %d: linear×4 at 40 = (%v, %v), plain at 10 = (%v, %v)", i, c1[i], s1[i], c2[i], s2[i])
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Config{
		{Dims: 0, Base: 10000},
		{Dims: 7, Base: 10000},
		{Dims: 8, Base: 0},
		{Dims: 8, Base: float32(math.NaN())},
		{Dims: 8, Base: 10000, Scaling: Linear},
		{Dims: 8, Base: 10000, Scaling: YaRN, Factor: 2},
		{Dims: 8, Base: 10000, Layout: 7},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if _, err := ParseScaling("dynamic"); err == nil {
		t.Error("ParseScaling(dynamic): no error")
	}
}

func TestNoPE(t *testing.T) {
	m := EveryNth(8, 4)
	for i := range 8 {
		if want := (i+1)%4 != 0; m.Rotates(i) != want {
			t.Errorf("layer %d: Rotates = %v, want %v", i, m.Rotates(i), want)
		}
	}
	var none NoPE
	if !none.Rotates(3) {
		t.Error("nil mask must rotate every layer")
	}
}

// Per-frequency factors (Llama 3's rope_freqs) divide each pair's angle:
// factors of 1 change nothing, factors of 2 halve every angle exactly as
// linear scaling by 2 does, and bad factors are refused.
func TestFactors(t *testing.T) {
	base := Config{Dims: 64, Base: 500000}
	ones, twos := make([]float32, 32), make([]float32, 32)
	for i := range ones {
		ones[i], twos[i] = 1, 2
	}
	withOnes, withTwos, linear := base, base, base
	withOnes.Factors, withTwos.Factors = ones, twos
	linear.Scaling, linear.Factor = Linear, 2
	for _, pos := range []int{0, 1, 7, 1000, 131071} {
		c0, s0 := make([]float32, 32), make([]float32, 32)
		c1, s1 := make([]float32, 32), make([]float32, 32)
		base.Angles(pos, c0, s0)
		withOnes.Angles(pos, c1, s1)
		if !slices.Equal(c0, c1) || !slices.Equal(s0, s1) {
			t.Errorf("pos %d: factors of 1 changed the angles", pos)
		}
		linear.Angles(pos, c0, s0)
		withTwos.Angles(pos, c1, s1)
		if !slices.Equal(c0, c1) || !slices.Equal(s0, s1) {
			t.Errorf("pos %d: factors of 2 differ from linear scaling by 2", pos)
		}
	}
	for _, c := range []struct {
		name    string
		factors []float32
	}{{"short", ones[:31]}, {"zero", append(slices.Clone(ones[:31]), 0)}, {"negative", append(slices.Clone(ones[:31]), -1)}} {
		bad := base
		bad.Factors = c.factors
		if err := bad.Validate(); err == nil {
			t.Errorf("%s factors: no error", c.name)
		}
	}
}

// M-RoPE with text positions turns every pair as plain RoPE does, except
// the pairs of the extra (fourth) component, which stay at position 0:
// ggml_mrope_cache_init's sectors, with llama.cpp's text positions (the
// first three components the token's position, the fourth 0).
func TestMRoPETextPositions(t *testing.T) {
	for _, c := range []struct {
		name        string
		dims        int
		sections    [4]int
		interleaved bool
		still       []int // the pairs that do not turn
	}{
		{"qwen35-tiny interleaved [1 1 2 0]", 8, [4]int{1, 1, 2, 0}, true, []int{3}},
		{"qwen3.5 interleaved [11 11 10 0]", 64, [4]int{11, 11, 10, 0}, true, nil},
		{"qwen2-vl [16 24 24 0]", 128, [4]int{16, 24, 24, 0}, false, nil},
		{"contiguous with an extra section [1 1 1 1]", 8, [4]int{1, 1, 1, 1}, false, []int{3}},
		{"interleaved [1 1 1 1], wrapping", 12, [4]int{1, 1, 1, 1}, true, []int{3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Config{Dims: c.dims, Base: 1e7, Layout: NeoX, Sections: c.sections, Interleaved: c.interleaved}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			plain := m
			plain.Sections, plain.Interleaved = [4]int{}, false
			half := c.dims / 2
			cos, sin := make([]float32, half), make([]float32, half)
			pc, ps := make([]float32, half), make([]float32, half)
			for _, pos := range []int{0, 1, 17, 4000} {
				m.Angles(pos, cos, sin)
				plain.Angles(pos, pc, ps)
				for i := range half {
					wantC, wantS := pc[i], ps[i]
					if slices.Contains(c.still, i) {
						wantC, wantS = 1, 0
					}
					if cos[i] != wantC || sin[i] != wantS {
						t.Fatalf("pos %d pair %d: cos, sin = %v, %v, want %v, %v", pos, i, cos[i], sin[i], wantC, wantS)
					}
				}
				// Shifting moves no still pair either.
				m.ShiftAngles(pos, cos, sin)
				for _, i := range c.still {
					if cos[i] != 1 || sin[i] != 0 {
						t.Fatalf("shift %d moves still pair %d: %v, %v", pos, i, cos[i], sin[i])
					}
				}
			}
		})
	}
}

func TestMRoPEValidate(t *testing.T) {
	for _, c := range []Config{
		{Dims: 8, Base: 1e4, Sections: [4]int{1, -1, 2, 0}},
		{Dims: 8, Base: 1e4, Interleaved: true},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestMRoPEImagePositions checks AnglesAt on an image row's three
// positions: every pair turns exactly as plain RoPE's pair does at the
// position of the pair's component (temporal, height, width by the
// sections, contiguous or interleaved; the extra component at 0), and
// equal positions give Angles' bits.
func TestMRoPEImagePositions(t *testing.T) {
	for _, c := range []struct {
		name        string
		dims        int
		sections    [4]int
		interleaved bool
		comp        []int // each pair's component, as ggml_mrope_cache_init assigns it
	}{
		{"contiguous [1 2 1 0]", 8, [4]int{1, 2, 1, 0}, false, []int{0, 1, 1, 2}},
		{"contiguous with an extra section [1 1 1 1], wrapping", 12, [4]int{1, 1, 1, 1}, false, []int{0, 1, 2, 3, 0, 1}},
		{"interleaved [1 1 2 0]", 8, [4]int{1, 1, 2, 0}, true, []int{0, 1, 2, 3}},
		{"interleaved [2 2 1 0]", 10, [4]int{2, 2, 1, 0}, true, []int{0, 1, 2, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Config{Dims: c.dims, Base: 1e4, Layout: NeoX, Sections: c.sections, Interleaved: c.interleaved}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			plain := m
			plain.Sections, plain.Interleaved = [4]int{}, false
			half := c.dims / 2
			cos, sin := make([]float32, half), make([]float32, half)
			pc, ps := make([]float32, half), make([]float32, half)
			for _, p := range [][3]int{{5, 2, 9}, {100, 0, 3}, {7, 7, 7}} {
				m.AnglesAt(p[0], p[1], p[2], cos, sin)
				for i := range half {
					pos := 0
					if c.comp[i] < 3 {
						pos = p[c.comp[i]]
					}
					plain.Angles(pos, pc, ps)
					if cos[i] != pc[i] || sin[i] != ps[i] {
						t.Fatalf("positions %v pair %d: cos, sin = %v, %v, want component %d's %v, %v", p, i, cos[i], sin[i], c.comp[i], pc[i], ps[i])
					}
				}
				if p[0] == p[1] && p[1] == p[2] {
					m.Angles(p[0], pc, ps)
					if !slices.Equal(cos, pc) || !slices.Equal(sin, ps) {
						t.Fatalf("equal positions %v: AnglesAt %v %v, Angles %v %v", p, cos, sin, pc, ps)
					}
				}
			}
		})
	}
}
