package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

func TestCORS(t *testing.T) {
	const trusted, other = "https://app.example", "https://evil.example"
	ts := start(t, &servertest.Engine{}, server.Config{CORSOrigins: []string{trusted}})
	do := func(method, origin string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}

	resp := do("OPTIONS", trusted, preflight)
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != trusted ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("trusted preflight: %d %v", resp.StatusCode, h)
	}
	for _, want := range []string{"Authorization", "Content-Type", "x-stainless-os"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	resp = do("POST", trusted, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != trusted {
		t.Errorf("trusted POST: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// Other origins stay refused, and get no CORS headers.
	resp = do("OPTIONS", other, preflight)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode == http.StatusNoContent {
		t.Errorf("untrusted preflight answered: %d %v", resp.StatusCode, resp.Header)
	}
	resp = do("POST", other, nil)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("untrusted POST: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// By default every other origin is refused.
	def := start(t, &servertest.Engine{}, server.Config{})
	req, _ := http.NewRequest("POST", def.URL+"/v1/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Origin", trusted)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("default config: %d, ACAO %q", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
	}
}
