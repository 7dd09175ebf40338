package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/server"
)

// A template of the user's own (engine.WithChatTemplate, webchat
// -chat-template-file) renders the prompt; chat_template_kwargs reach it;
// /apply-template returns its text itself; and a template that explodes
// on some request (deep recursion, a loop of 10^10, a 1 GB string) fails
// that request within a second with a clear error while the server goes
// on serving the next.
func TestChatTemplateOverride(t *testing.T) {
	const tmpl = `{%- if boom is defined %}{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}{% endif -%}
{%- if spin is defined %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif -%}
{%- if big is defined %}{{ 'a' * 1000000000 }}{% endif -%}
{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if greeting is defined %}[{{ greeting }}]{% endif %}<|im_start|>assistant
`
	m, err := engine.Open(goldentest.TinyModel(t, "qwen2-tiny-Q4_K_M"), engine.WithThreads(2), engine.WithContext(512), engine.WithChatTemplate(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "custom"})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})

	resp := post(t, ts.URL+"/apply-template", `{"messages":[{"role":"user","content":"Hi"}],"chat_template_kwargs":{"greeting":"hola"}}`)
	var r struct{ Prompt string }
	decode(t, resp.Body, &r)
	// (jinja2 drops the template's final line break: keep_trailing_newline is off)
	if want := "<|im_start|>user\nHi<|im_end|>\n[hola]<|im_start|>assistant"; resp.StatusCode != 200 || r.Prompt != want {
		t.Errorf("apply-template: status %d, %q; want %q", resp.StatusCode, r.Prompt, want)
	}

	for _, kw := range []string{"boom", "spin", "big"} {
		begin := time.Now()
		resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"chat_template_kwargs":{"`+kw+`":true}}`)
		body := readAll(t, resp)
		t.Logf("%s: %d after %v: %s", kw, resp.StatusCode, time.Since(begin), body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "jinja: ") {
			t.Errorf("%s: status %d, %s; want 400 with the template's error", kw, resp.StatusCode, body)
		}
		resp = post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`)
		var c struct{ Choices []json.RawMessage }
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 || len(c.Choices) != 1 {
			t.Errorf("after %s: status %d; want the server still serving", kw, resp.StatusCode)
		}
	}
}
