package jinja

import (
	"context"
	"testing"
)

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
