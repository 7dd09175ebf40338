package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
)

// TestLegacyTopLogprobsKeys: byte tokens (parts of a character) all read
// "\ufffd" in JSON; the legacy top_logprobs object has each key once, with
// the likeliest logprob.
func TestLegacyTopLogprobsKeys(t *testing.T) {
	var l textLogprobs
	l.add([]engine.TokenLogprob{{Text: "a", Logprob: -0.1, Top: []engine.TopLogprob{
		{Text: "a", Logprob: -0.1}, {Text: "\xe2", Logprob: -1}, {Text: "\xe3", Logprob: -2}, {Text: "b", Logprob: -3},
	}}}, 0)
	b, err := json.Marshal(l.TopLogprobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); strings.Count(got, `"\ufffd"`)+strings.Count(got, "\"\uFFFD\"") != 1 || !strings.Contains(got, ":-1") {
		t.Fatalf("top_logprobs %s", got)
	}
}

// TestStoredResponsesCountEverything is the attack's 600 stored responses
// in 990 MB: what a response stores besides its conversation's text
// (metadata, tools, instructions, the output object) counts against
// MaxStoredResponseBytes.
func TestStoredResponsesCountEverything(t *testing.T) {
	st := newResponseStore(1000, 1<<20)
	big := json.RawMessage(`{"k":"` + strings.Repeat("x", 100<<10) + `"}`)
	instr := strings.Repeat("y", 100<<10)
	for i := range 50 {
		resp := &responseObject{ID: "resp_" + string(rune('a'+i)), Object: "response", Metadata: big, Tools: json.RawMessage(`[` + string(big) + `]`), Instructions: &instr}
		st.put(resp.ID, storedResponse{conversation: []engine.Message{{Role: "user", Content: "hi"}}, response: resp})
	}
	n, bytes := st.usage()
	if bytes > 1<<20 || n > 4 {
		t.Fatalf("%d responses stored, counted as %d bytes; the bound is %d", n, bytes, 1<<20)
	}
}
