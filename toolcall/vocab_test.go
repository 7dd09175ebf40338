package toolcall

import (
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tokenizer"
)

// TestSmolLM3Tags checks the tag ids against SmolLM3's real vocabulary and
// runs a tokenized answer through the parser.
func TestSmolLM3Tags(t *testing.T) {
	tok, err := tokenizer.LoadGGUF(sharedtest.Path(t, "tokenizer/smollm3-vocab.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	open, ok1 := tok.ID(OpenTag)
	closeTag, ok2 := tok.ID(CloseTag)
	if !ok1 || !ok2 || open != openID || closeTag != closeID {
		t.Fatalf("ids %d %v, %d %v; want %d, %d", open, ok1, closeTag, ok2, openID, closeID)
	}
	ids := tok.Encode("Sure!\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>", false)
	p := NewParser(open, closeTag)
	dec := tok.NewStreamDecoder(false)
	var evs []Event
	sawOpen := false
	for _, id := range ids {
		sawOpen = sawOpen || id == open
		text, err := dec.Push(id)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, p.Push(id, text)...)
	}
	evs = append(evs, p.Flush()...)
	if !sawOpen {
		t.Fatal("the tokenizer did not produce <tool_call> as one token")
	}
	if got := norm(evs); len(got) != 2 || got[0] != "text:Sure!\n" || got[1] != `call:get_weather{"city":"Zürich"}` {
		t.Fatalf("events %q", got)
	}
}
