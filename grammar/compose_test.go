package grammar

import (
	"context"
	"strings"
	"testing"
)

func TestCompose(t *testing.T) {
	city, err := FromJSONSchema([]byte(`{"type":"string","enum":["Paris","Rome"]}`))
	if err != nil {
		t.Fatal(err)
	}
	days, err := FromJSONSchema([]byte(`{"type":"integer","minimum":1,"maximum":7}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compose(context.Background(), `root ::= "<city>" city "</city>" ( "<days>" days "</days>" )?`,
		map[string]*Grammar{"city": city, "days": days})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text             string
		prefix, complete bool
	}{
		{`<city>"Paris"</city>`, true, true},
		{`<city>"Rome"</city><days>7</days>`, true, true},
		{`<city>"Rome"</city><days>8`, false, false},
		{`<city>"Oslo"`, false, false},
		{`<city>"Ro`, true, false},
	} {
		if p, c := g.Match([]byte(tt.text)); p != tt.prefix || c != tt.complete {
			t.Errorf("Match(%q) = %v, %v; want %v, %v", tt.text, p, c, tt.prefix, tt.complete)
		}
	}
	// The composed source parses back to the same language.
	again, err := Parse(g.String())
	if err != nil {
		t.Fatalf("the composed source does not parse: %v\n%s", err, g)
	}
	if p, c := again.Match([]byte(`<city>"Rome"</city><days>3</days>`)); !p || !c {
		t.Error("the reparsed source rejects a valid text")
	}

	for _, tt := range []struct {
		src  string
		subs map[string]*Grammar
		want string
	}{
		{`root ::= city`, map[string]*Grammar{}, "undefined rule"},
		{`root ::= city` + "\ncity ::= \"x\"", map[string]*Grammar{"city": city}, "both a rule of the source"},
		{`root ::= city` + "\ncity-root ::= \"x\"", map[string]*Grammar{"city": city}, "clashes"},
		{`root ::= city`, map[string]*Grammar{"city": nil}, "no source"},
	} {
		if _, err := Compose(context.Background(), tt.src, tt.subs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compose(%q): err = %v, want one mentioning %q", tt.src, err, tt.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compose(ctx, `root ::= "x"`, nil); err == nil {
		t.Error("no error on a cancelled context")
	}
}
