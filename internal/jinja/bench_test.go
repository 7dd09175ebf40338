package jinja

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkLoop is a million loop iterations writing 16 MB.
func BenchmarkLoop(b *testing.B) {
	p, err := Parse(`{% for i in range(1000) %}{% for j in range(1000) %}0123456789abcdef{% endfor %}{% endfor %}`)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.Render(context.Background(), nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQwen3 renders Qwen3's template on conversations of 10 and 1000
// turns (parsed once, as a model does).
func BenchmarkQwen3(b *testing.B) {
	src, err := os.ReadFile("../../models/qwen3/chat/testdata/Qwen-Qwen3-0.6B.jinja")
	if err != nil {
		b.Fatal(err)
	}
	p, err := Parse(string(src))
	if err != nil {
		b.Fatal(err)
	}
	for _, turns := range []int{10, 1000} {
		var msgs []string
		for i := range turns {
			role := []string{"user", "assistant"}[i%2]
			msgs = append(msgs, fmt.Sprintf(`{"role": %q, "content": "Message %d: %s"}`, role, i, strings.Repeat("word ", 40)))
		}
		vars := NewDict()
		vars.Set("messages", MustJSON("["+strings.Join(msgs, ",")+"]"))
		vars.Set("add_generation_prompt", Bool(true))
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Render(context.Background(), vars, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
