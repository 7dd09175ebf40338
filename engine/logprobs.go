package engine

import (
	"math"
	"sort"
)

// logprober computes log-probabilities of sampled tokens from the model's
// raw logits (before sampling settings and constraints, as OpenAI's
// logprobs are).
type logprober struct {
	top  int
	tok  Tokenizer // spells the tokens; nil leaves Text empty
	heap []TopLogprob
}

// of returns token tok's log-probability under logits, with the top most
// likely tokens.
func (l *logprober) of(logits []float32, tok int32) TokenLogprob {
	maxv := float32(math.Inf(-1))
	for _, v := range logits {
		maxv = max(maxv, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - maxv))
	}
	lse := float64(maxv) + math.Log(sum)
	lp := TokenLogprob{Token: tok, Text: l.text(tok), Logprob: float32(float64(logits[tok]) - lse)}
	if l.top > 0 {
		l.heap = l.heap[:0]
		for id, v := range logits {
			if len(l.heap) < l.top {
				l.heap = append(l.heap, TopLogprob{Token: int32(id), Logprob: v})
				if len(l.heap) == l.top {
					sort.Slice(l.heap, func(i, j int) bool { return l.heap[i].Logprob > l.heap[j].Logprob })
				}
				continue
			}
			if v <= l.heap[l.top-1].Logprob {
				continue
			}
			i := sort.Search(l.top, func(i int) bool { return l.heap[i].Logprob < v })
			copy(l.heap[i+1:], l.heap[i:l.top-1])
			l.heap[i] = TopLogprob{Token: int32(id), Logprob: v}
		}
		sort.SliceStable(l.heap, func(i, j int) bool { return l.heap[i].Logprob > l.heap[j].Logprob })
		lp.Top = make([]TopLogprob, len(l.heap))
		for i, e := range l.heap {
			lp.Top[i] = TopLogprob{Token: e.Token, Text: l.text(e.Token), Logprob: float32(float64(e.Logprob) - lse)}
		}
	}
	return lp
}

// text is token id's text, or "" without a tokenizer.
func (l *logprober) text(id int32) string {
	if l.tok == nil {
		return ""
	}
	return string(l.tok.TokenBytes(id))
}
