package grammar

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestIntegerBounds checks bounded integer schemas against the definition
// on every integer near the bounds and on random ones.
func TestIntegerBounds(t *testing.T) {
	tests := []struct {
		bounds       string
		lo, hi       int64
		hasLo, hasHi bool
	}{
		{`"minimum":0`, 0, 0, true, false},
		{`"minimum":1`, 1, 0, true, false},
		{`"exclusiveMinimum":0`, 1, 0, true, false},
		{`"minimum":15,"maximum":255`, 15, 255, true, true},
		{`"minimum":0,"maximum":9`, 0, 9, true, true},
		{`"minimum":-40,"maximum":125`, -40, 125, true, true},
		{`"minimum":-1234,"maximum":-17`, -1234, -17, true, true},
		{`"maximum":100`, 0, 100, false, true},
		{`"maximum":-5`, 0, -5, false, true},
		{`"minimum":7,"maximum":7`, 7, 7, true, true},
		{`"minimum":1.5,"exclusiveMaximum":1000`, 2, 999, true, true},
		{`"minimum":100,"maximum":10000,"exclusiveMaximum":5000,"exclusiveMinimum":200.5`, 201, 4999, true, true},
		{`"minimum":1000000,"maximum":123456789012`, 1000000, 123456789012, true, true},
		{`"minimum":-99999999`, -99999999, 0, true, false},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tt := range tests {
		g, err := FromJSONSchema([]byte(`{"type":"integer",` + tt.bounds + `}`))
		if err != nil {
			t.Fatalf("%s: %v", tt.bounds, err)
		}
		in := func(n int64) bool { return (!tt.hasLo || n >= tt.lo) && (!tt.hasHi || n <= tt.hi) }
		var probe []int64
		for _, c := range []int64{0, tt.lo, tt.hi} {
			for d := int64(-120); d <= 120; d++ {
				probe = append(probe, c+d)
			}
		}
		for range 2000 {
			probe = append(probe, rng.Int64N(2e12)-1e12, rng.Int64N(2e6)-1e6)
		}
		for _, n := range probe {
			_, complete := g.Match([]byte(strconv.FormatInt(n, 10)))
			if complete != in(n) {
				t.Fatalf("%s: %d matched %v, want %v\n%s", tt.bounds, n, complete, in(n), g)
			}
		}
		for _, bad := range []string{"01", "-0", "+1", "1.0", "1e2", ""} {
			if _, complete := g.Match([]byte(bad)); complete && bad != "-0" {
				t.Fatalf("%s: %q matched", tt.bounds, bad)
			}
		}
	}
	for _, tt := range []struct{ schema, want string }{
		{`{"type":"integer","minimum":5,"maximum":4}`, "no integer lies between the bounds (from 5 to 4)"},
		{`{"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5}`, "no integer lies between"},
		{`{"type":"integer","maximum":1e20}`, "beyond the 16-digit numbers"},
		{`{"type":"number","minimum":0.5,"maximum":0.25}`, `no number lies between the bounds`},
		{`{"type":"integer","minimum":"0"}`, "minimum: must be a number"},
	} {
		if _, err := FromJSONSchema([]byte(tt.schema)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.schema, err, tt.want)
		}
	}
}
