package server

import (
	"net/http"
	"slices"
	"strings"
)

// CORS: by default the server refuses state-changing requests from other
// web origins (crossSite) and sends no Access-Control-Allow-Origin, so a page
// on another site can neither use the model nor read its answers. Origins in
// Config.CORSOrigins are trusted: their pages may call the API from a
// browser, with an Authorization header and JSON bodies.

// corsMethods are the methods a trusted origin may use.
const corsMethods = "GET, POST, DELETE, OPTIONS"

// corsHeaders are the request headers a trusted origin may always send;
// others it asks for in a preflight (the SDKs' own headers) are granted too.
var corsHeaders = []string{"Authorization", "Content-Type", "X-Request-Id"}

// corsAllowed reports whether origin is in the allow-list ("*" allows any).
func corsAllowed(origin string, allowed []string) bool {
	return origin != "" && (slices.Contains(allowed, origin) || slices.Contains(allowed, "*"))
}

// cors adds the CORS headers for a trusted origin and answers its preflight
// requests; it reports whether it answered the request.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if !corsAllowed(origin, s.cfg.CORSOrigins) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	allow := slices.Clone(corsHeaders)
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); headerName(name) && len(allow) < 64 {
				allow = append(allow, name)
			}
		}
	}
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", strings.Join(allow, ", "))
	h.Set("Access-Control-Max-Age", "600")
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// headerName reports whether s is a plausible header name (letters, digits
// and dashes), so that only such names are echoed back.
func headerName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
