package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// alternating is fakeFormat with a template that, like Gemma 3's, needs the
// turns after the system prompt to start with the user and alternate.
type alternating struct{ fakeFormat }

func (a alternating) Prompt(msgs []Message, opts PromptOptions) ([]int32, error) {
	want := "user"
	for i, m := range msgs {
		if m.Role == "system" && i == 0 {
			continue
		}
		if m.Role != want {
			return nil, errors.New("roles must alternate user/assistant")
		}
		if want == "user" {
			want = "assistant"
		} else {
			want = "user"
		}
	}
	return a.fakeFormat.Prompt(msgs, opts)
}

// DropOldest drops whole exchanges where the template cannot start with the
// answer left of a dropped question.
func TestDropOldestAlternating(t *testing.T) {
	f := &fakeBackend{ctxLen: 64, answer: fixed("ok")}
	cfg, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(f, alternating{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	history := []Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: strings.Repeat("a", 20)},
		{Role: "assistant", Content: strings.Repeat("b", 10)},
		{Role: "user", Content: "now"},
	}
	var seen string
	f.answer = func(p []int32) string { seen = decodeFake(p); return "ok" }
	r := collect(m.NewSession(), context.Background(), history, GenerateOptions{DropOldest: true})
	if r.err != nil || r.content != "ok" || r.stats.DroppedMessages != 2 {
		t.Fatalf("DropOldest: %v %q %+v", r.err, r.content, r.stats)
	}
	if strings.Contains(seen, "bbbb") || !strings.Contains(seen, "now") {
		t.Errorf("the answer of the dropped question was kept: %q", seen)
	}
	// With the plain format one message goes, and the answer stays.
	r = collect(testModel(t, f).NewSession(), context.Background(), history, GenerateOptions{DropOldest: true})
	if r.err != nil || r.stats.DroppedMessages != 1 || !strings.Contains(seen, "bbbb") {
		t.Errorf("plain format: %v, %+v, %q", r.err, r.stats, seen)
	}
}
