package grammar

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDecimalBounds: non-integer minimum, maximum and exclusive bounds
// (zod's .min(0.5), .gt(0.1)) constrain numbers exactly: every number
// written is on the right side of each bound and none on the right side is
// refused (within the digits a bounded number has: 15 significant).
func TestDecimalBounds(t *testing.T) {
	for _, tc := range []struct {
		schema string
		in     map[string]bool
	}{
		{`{"type":"number","minimum":0.5}`, map[string]bool{"0.5": true, "0.50": true, "0.49": false, "0.499999": false, "0.51": true, "1": true, "12345.6": true, "0": false, "-1": false, "0.5000001": false}},
		{`{"type":"number","exclusiveMinimum":0.5}`, map[string]bool{"0.5": false, "0.500": false, "0.500001": true, "0.6": true, "1": true, "0.4": false}},
		{`{"type":"number","maximum":2.25}`, map[string]bool{"2.25": true, "2.250": true, "2.26": false, "2.2": true, "2": true, "-3.5": true, "3": false, "2.250001": false, "-0.5": true}},
		{`{"type":"number","exclusiveMaximum":2.25}`, map[string]bool{"2.25": false, "2.2500": false, "2.249999": true, "2": true, "2.3": false}},
		{`{"type":"number","minimum":0.1,"maximum":0.3}`, map[string]bool{"0.1": true, "0.2": true, "0.3": true, "0.30": true, "0.31": false, "0.09": false, "0": false, "1": false, "0.25": true}},
		{`{"type":"number","minimum":-2.5,"maximum":-0.25}`, map[string]bool{"-2.5": true, "-2.51": false, "-1": true, "-0.25": true, "-0.24": false, "0": false, "-0.3": true}},
		{`{"type":"number","minimum":-0.5,"exclusiveMaximum":0.5}`, map[string]bool{"-0.5": true, "-0.6": false, "0": true, "0.4": true, "0.5": false, "-0": false}},
		{`{"type":"number","minimum":1.05,"maximum":1.05}`, map[string]bool{"1.05": true, "1.050": true, "1.051": false, "1.04": false, "1": false}},
		{`{"type":"number","minimum":0,"maximum":1}`, map[string]bool{"0": true, "1": true, "1.0": true, "1.01": false, "0.999": true}},
		{`{"type":"number","minimum":1e-3}`, map[string]bool{"0.001": true, "0.0009": false, "0.01": true}},
		{`{"type":"number","exclusiveMinimum":0.0000001}`, map[string]bool{"0.000001": true, "0": false, "0.0000001": false}},
	} {
		g, err := FromJSONSchema([]byte(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		for in, want := range tc.in {
			if _, ok := g.Match([]byte(in)); ok != want {
				t.Errorf("%s: %s: %v, want %v", tc.schema, in, ok, want)
			}
		}
	}
}

// TestDecimalBoundsRandom checks random decimal bounds against exact
// comparisons, on numbers near the bounds and anywhere.
func TestDecimalBoundsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dec := func() string {
		v := rng.IntN(40000) - 20000
		return new(big.Rat).SetFrac64(int64(v), 1000).FloatString(rng.IntN(4))
	}
	for range 60 {
		a, b := dec(), dec()
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if ra.Cmp(rb) > 0 {
			a, b, ra, rb = b, a, rb, ra
		}
		exA, exB := rng.IntN(2) == 0, rng.IntN(2) == 0
		kA, kB := "minimum", "maximum"
		if exA {
			kA = "exclusiveMinimum"
		}
		if exB {
			kB = "exclusiveMaximum"
		}
		schema := fmt.Sprintf(`{"type":"number",%q:%s,%q:%s}`, kA, a, kB, b)
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			if ra.Cmp(rb) == 0 && (exA || exB) {
				continue
			}
			t.Fatalf("%s: %v", schema, err)
		}
		for range 300 {
			x := new(big.Rat).SetFrac64(int64(rng.IntN(50000)-25000), 1000)
			if rng.IntN(2) == 0 {
				x.Add(ra, new(big.Rat).SetFrac64(int64(rng.IntN(21)-10), 1000))
			}
			text := x.FloatString(rng.IntN(5))
			x.SetString(text)
			want := (ra.Cmp(x) < 0 || !exA && ra.Cmp(x) == 0) && (x.Cmp(rb) < 0 || !exB && x.Cmp(rb) == 0)
			if strings.HasPrefix(text, "-") && x.Sign() == 0 {
				want = false // "-0" is never written
			}
			if _, ok := g.Match([]byte(text)); ok != want {
				t.Fatalf("%s: %s matched %v, want %v", schema, text, ok, want)
			}
		}
	}
}
