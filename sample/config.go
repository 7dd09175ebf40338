package sample

import (
	"fmt"
	"math"
)

// DefaultPenaltyWindow is the number of recent tokens the penalties look at
// when Config.PenaltyWindow is 0 (llama.cpp's repeat_last_n default).
const DefaultPenaltyWindow = 64

// Config selects the samplers of a chain and their settings. The zero value
// is greedy decoding: temperature 0 picks the most likely token.
//
// A setting at its "off" value removes that sampler from the chain:
//
//	Temperature       <= 0 greedy (argmax, ties go to the lowest token id)
//	TopK              <= 0 off (or >= vocabulary size)
//	TopP              <= 0 or >= 1 off
//	MinP              <= 0 off
//	RepeatPenalty     0 or 1 off
//	PresencePenalty   0 off
//	FrequencyPenalty  0 off
//
// The samplers run in llama.cpp's default order: penalties, top-k, top-p,
// min-p, temperature, then a random draw. Top-p and min-p therefore see the
// probabilities at temperature 1, and temperature reshapes only what
// survived them, exactly as llama.cpp does.
type Config struct {
	// Temperature divides the logits before the draw. 0 means greedy.
	Temperature float32
	// TopK keeps the K most likely tokens.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probabilities
	// add up to at least TopP (the token that crosses the line is kept).
	TopP float32
	// MinP keeps the tokens whose probability is at least MinP times the
	// probability of the most likely token.
	MinP float32
	// RepeatPenalty divides positive logits and multiplies negative logits
	// of every token seen in the penalty window (values > 1 discourage
	// repetition).
	RepeatPenalty float32
	// PresencePenalty is subtracted once from the logit of every token seen
	// in the penalty window.
	PresencePenalty float32
	// FrequencyPenalty is subtracted from a token's logit once per time it
	// occurs in the penalty window.
	FrequencyPenalty float32
	// PenaltyWindow is how many of the most recently accepted tokens the
	// penalties count. 0 means DefaultPenaltyWindow; negative means none.
	PenaltyWindow int
	// Seed seeds the random draw: the same seed, configuration and logits
	// give the same tokens. 0 picks a random seed (see Sampler.Seed).
	Seed uint64
}

// Greedy returns a configuration that always picks the most likely token.
func Greedy() Config { return Config{} }

// SmolLM3Defaults returns the sampling settings recommended for SmolLM3:
// temperature 0.6 and top-p 0.95.
func SmolLM3Defaults() Config {
	return Config{Temperature: 0.6, TopP: 0.95}
}

// Validate reports settings that New would silently treat as "off" or clamp:
// NaN or infinite values, a negative temperature, TopP or MinP outside [0, 1],
// and a negative RepeatPenalty. Servers should call it on user input so that
// a typo is an error rather than a surprise.
func (c Config) Validate() error {
	check := func(name string, v float32, lo, hi float64) error {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("sample: %s is %v, want a finite number", name, v)
		}
		if f < lo || f > hi {
			return fmt.Errorf("sample: %s = %v is outside [%v, %v]", name, v, lo, hi)
		}
		return nil
	}
	inf := math.Inf(1)
	for _, e := range []error{
		check("Temperature", c.Temperature, 0, inf),
		check("TopP", c.TopP, 0, 1),
		check("MinP", c.MinP, 0, 1),
		check("RepeatPenalty", c.RepeatPenalty, 0, inf),
		check("PresencePenalty", c.PresencePenalty, -inf, inf),
		check("FrequencyPenalty", c.FrequencyPenalty, -inf, inf),
	} {
		if e != nil {
			return e
		}
	}
	if c.TopK < 0 {
		return fmt.Errorf("sample: TopK = %d is negative (use 0 to turn it off)", c.TopK)
	}
	return nil
}

// String describes the active samplers in chain order, for logs.
func (c Config) String() string {
	n := c.normalized()
	if n.Temperature <= 0 {
		s := "greedy"
		if n.penalized() {
			s = n.penaltyString() + " → " + s
		}
		return s
	}
	s := ""
	add := func(part string) {
		if s != "" {
			s += " → "
		}
		s += part
	}
	if n.penalized() {
		add(n.penaltyString())
	}
	if n.TopK > 0 {
		add(fmt.Sprintf("top-k %d", n.TopK))
	}
	if n.TopP > 0 {
		add(fmt.Sprintf("top-p %g", n.TopP))
	}
	if n.MinP > 0 {
		add(fmt.Sprintf("min-p %g", n.MinP))
	}
	add(fmt.Sprintf("temperature %g", n.Temperature))
	add(fmt.Sprintf("dist(seed %d)", n.Seed))
	return s
}

func (c Config) penaltyString() string {
	return fmt.Sprintf("penalties(last %d: repeat %g, presence %g, frequency %g)",
		c.PenaltyWindow, c.RepeatPenalty, c.PresencePenalty, c.FrequencyPenalty)
}

// normalized maps every "off" or out-of-range setting to its canonical off
// value, so the sampler only has to test for > 0.
func (c Config) normalized() Config {
	bad := func(v float32) bool { return v != v || math.IsInf(float64(v), 0) }
	if bad(c.Temperature) || c.Temperature < 0 {
		c.Temperature = 0
	}
	if c.TopK < 0 {
		c.TopK = 0
	}
	if bad(c.TopP) || c.TopP <= 0 || c.TopP >= 1 {
		c.TopP = 0
	}
	if bad(c.MinP) || c.MinP <= 0 {
		c.MinP = 0
	}
	if c.MinP > 1 {
		c.MinP = 1
	}
	if bad(c.RepeatPenalty) || c.RepeatPenalty <= 0 || c.RepeatPenalty == 1 {
		c.RepeatPenalty = 1
	}
	if bad(c.PresencePenalty) {
		c.PresencePenalty = 0
	}
	if bad(c.FrequencyPenalty) {
		c.FrequencyPenalty = 0
	}
	switch {
	case c.PenaltyWindow == 0:
		c.PenaltyWindow = DefaultPenaltyWindow
	case c.PenaltyWindow < 0:
		c.PenaltyWindow = 0
	}
	return c
}

func (c Config) penalized() bool {
	return c.PenaltyWindow > 0 && (c.RepeatPenalty != 1 || c.PresencePenalty != 0 || c.FrequencyPenalty != 0)
}
