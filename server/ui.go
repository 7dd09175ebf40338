package server

import (
	"embed"
	"io/fs"
	"net/http"
)

// The web chat: plain HTML, CSS and JavaScript, embedded so the binary is
// the whole app. The page talks to the same API as any client
// (/v1/chat/completions with stream: true) plus /api/sessions to keep one
// server-side session per conversation.
//
//go:embed web
var webFiles embed.FS

func (s *Server) uiRoutes() {
	serve := uiHandler()
	s.mux.Handle("GET /{$}", serve)
	for _, name := range uiFiles {
		s.mux.Handle("GET "+name, serve)
	}
}

// uiFiles are the page's files besides /.
var uiFiles = []string{"/app.js", "/markdown.js", "/style.css", "/favicon.svg"}

// uiHandler serves the page's files.
func uiHandler() http.Handler {
	sub, _ := fs.Sub(webFiles, "web")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The page runs no inline script and loads nothing from elsewhere;
		// the policy makes any injected markup inert as a second line of
		// defence behind the safe Markdown renderer.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
