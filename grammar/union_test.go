package grammar

import (
	"context"
	"testing"
)

// TestUnion: the union of grammars takes exactly the strings of each, and
// its own source compiles to the same language (so unions nest).
func TestUnion(t *testing.T) {
	ctx := context.Background()
	calls, err := ToolCalls([]Function{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	answer, err := FromJSONSchema([]byte(`{"type":"object","properties":{"n":{"type":"number","minimum":0.5}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	odd := MustParse(`root ::= [^\]\-^"\\]+ "\"\\\n\x01\u00e9" [a-c\-]`)
	u, err := Union(ctx, calls, answer, odd)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(u.String())
	if err != nil {
		t.Fatalf("the union's source does not parse: %v\n%s", err, u)
	}
	for in, want := range map[string]bool{
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>": true,
		`{"n": 0.75}`: true,
		`{"n": 0.25}`: false,
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>": false,
		"ab\"\\\n\x01é-": true,
		"a]\"\\\n\x01éb": false,
		"":               false,
	} {
		for name, g := range map[string]*Grammar{"union": u, "reparsed": again} {
			if _, ok := g.Match([]byte(in)); ok != want {
				t.Errorf("%s: %q: %v, want %v", name, in, ok, want)
			}
		}
	}
	if _, err := Union(ctx); err == nil {
		t.Error("an empty union compiled")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Union(cancelled, calls, answer); err != context.Canceled {
		t.Errorf("a cancelled union: %v", err)
	}
}
