// Package server serves a language model over HTTP: the APIs that chat
// clients, coding agents and agent SDKs speak, and a web chat page, all from
// one http.Handler; an embedding model gets POST /v1/embeddings and
// /v1/rerank instead (embeddings.go, rerank.go). The routes:
//
//	POST /v1/chat/completions, /chat/completions  OpenAI chat completions (openai.go, chat.go)
//	POST /v1/responses                            OpenAI's Responses API (responses.go)
//	GET, DELETE /v1/responses/{id}                a stored response
//	POST /v1/messages                             Anthropic's Messages API (messages.go)
//	POST /v1/messages/count_tokens                the prompt a Messages request makes, in tokens
//	POST /v1/completions, /completions            plain completions: a raw prompt (completions.go)
//	POST /v1/embeddings, /embeddings              OpenAI embeddings, of an embedding model (embeddings.go)
//	POST /v1/rerank, /rerank                      Jina/Cohere/llama-server rerank, of a reranker (rerank.go)
//	POST /tokenize, /detokenize                   llama-server's tokenizer endpoints
//	POST /apply-template                          llama-server's: the prompt the template makes (template.go)
//	GET  /v1/models, /v1/models/{id}              the served model
//	GET  /health, /metrics                        status, and Prometheus metrics (metrics.go)
//	GET  /livez, /readyz                          liveness and readiness (lifecycle.go)
//	GET  /api/info; POST /api/sessions;
//	     DELETE /api/sessions/{id}                the web chat's (sessions.go, ui.go)
//	GET  /, /app.js, /markdown.js, /style.css,
//	     /favicon.svg                             the web chat page (unless Config.DisableUI)
//
// Each API has one validator that turns its request straight into engine
// messages and options, with errors in its own field names (door.go); the
// answers are written in the API's own shapes and events. The model is
// anything that implements Engine; FromModel adapts an *engine.Model (what
// engine.Open returns) and package servertest runs the real engine
// over a scripted fake model for tests. The server sees sessions and their
// events, never kernels.
//
//	m, err := engine.Open("SmolLM3-3B-Q4_K_M.gguf") // with _ "github.com/smolgo/smolgo/models"
//	e, err := server.FromModel(m, server.ModelOptions{Name: "smollm3"})
//	srv := server.New(e, server.Config{Sampler: sample.SmolLM3Defaults()})
//	err := srv.ListenAndServe(ctx, "127.0.0.1:8080") // returns when ctx ends, after a graceful shutdown
//
// Serving behaviour:
//
//   - Generation runs in a fixed number of slots (Config.Slots, by default
//     the engine's batch size: engine.Config.MaxSequences). The engine
//     batches the running generations, so each forward step reads the
//     weights once for all of them (continuous batching; see package
//     engine). Requests that find every slot
//     busy wait first come, first served in a line of at most Config.MaxQueue;
//     past that the server answers 503 with a Retry-After header.
//   - A client that disconnects cancels its generation: the engine sees the
//     request's context end and the slot is freed for the next request.
//   - Request bodies (Config.MaxBodyBytes → 413) and prompt text
//     (Config.MaxPromptBytes → 400 context_length_exceeded) are bounded; a
//     prompt longer than the model's context is a 400 with the numbers.
//   - The web chat keeps each conversation in a server-side session with its
//     own KV cache (POST /api/sessions, then "session_id" in the chat request);
//     idle sessions are evicted least recently used first, bounded by count,
//     by memory and by idle time.
//   - Serve drains when its context ends (SIGTERM): new requests get 503
//     with Retry-After while the listener stays open, running streams get
//     Config.ShutdownGrace to finish, then are cancelled (each gets an
//     error event and [DONE]), and Serve returns. ServeLoading answers
//     503 "Loading model" before the server exists (lifecycle.go).
//   - Requests with the same prompt_cache_key (or user) get the slot that
//     holds their conversation's KV cache when it is free, and every
//     response names the replica (X-Smolgo-Replica) for a balancer.
//   - Browsers may not send state-changing requests from other sites: a POST
//     or DELETE whose Origin header names another host gets 403, so a web page
//     cannot make a visitor's browser use the model. (API clients and curl
//     send no Origin.)
//   - Serve on a loopback address answers only requests whose Host is
//     localhost or a loopback IP (403 otherwise), which defeats DNS
//     rebinding: a web page cannot reach the server under its own name.
//   - Structured output: response_format {"type": "json_schema", …} or
//     {"type": "json_object"}, or a GBNF "grammar" (llama.cpp's extension),
//     constrain every sampled token with package grammar, so the answer
//     always parses; unsupported schema keywords are a 400 naming them.
//   - Tool calling: "tools" are shown to the model through its chat
//     template; the calls it writes come back as "tool_calls"
//     (finish_reason "tool_calls"; when streaming, one delta per call), and
//     "tool" messages and assistant tool_calls in the history go back to
//     the model as it wrote them. tool_choice "none", "auto", "required" or
//     a named function (the last two force a call with a grammar, whole or
//     not at all). Tools beside an answer format make one grammar: calls,
//     or the formatted answer. How the model writes a call is known in one
//     place, toolSyntax.
//   - Agents' conversations are taken as they come: system and developer
//     messages anywhere (folded as the template can render them), any
//     model name, max_tokens beyond the free context (clamped), tool types
//     the server cannot run (ignored and listed), item references to
//     stored responses.
//   - Every request is logged with log/slog: request id (also sent back as
//     X-Request-Id), status, duration, and for completions the token counts,
//     queue wait and speed.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smolgo/smolgo/sample"
)

// Config tunes a Server. Zero values mean the defaults in brackets.
type Config struct {
	Slots          int   // generations that run at once [the engine's MaxSequences, or 1]
	MaxQueue       int   // requests that may wait for a slot [16]; -1 means none may wait
	MaxBodyBytes   int64 // request body limit [1 MiB]
	MaxPromptBytes int   // limit on the messages' text [256 KiB]
	MaxSessions    int   // web-chat sessions kept [32]
	// MaxSessionsPerClient bounds the web-chat sessions one client (its IP
	// address) keeps: its next one replaces its own least recently used,
	// so that a client creating sessions in a loop cannot lock others out
	// [a quarter of MaxSessions, at least 8]; -1 means no bound (behind a
	// proxy every client has the proxy's address).
	MaxSessionsPerClient int
	MaxSessionBytes      int64         // memory the kept sessions may hold, when they report it [0: no bound]
	SessionIdle          time.Duration // a session idle this long is evicted [30m]
	SessionWait          time.Duration // how long a request waits for its busy session before 409 [5s]
	ShutdownGrace        time.Duration // how long Serve lets streams finish on shutdown [10s]
	Logger               *slog.Logger  // [slog.Default()]
	DisableUI            bool          // serve only the API, not the web page
	// Sampler is the sampling a request gets where it says nothing;
	// requests override temperature, top_p, top_k, min_p, penalties and
	// seed. The zero value is greedy; sample.SmolLM3Defaults() is SmolLM3's
	// recommended setting.
	Sampler sample.Config
	// DefaultMaxTokens caps answers whose request gives no max_tokens [0:
	// up to the context], so that a rambling answer cannot fill a
	// conversation's whole context.
	DefaultMaxTokens int
	// ParseSpecialTokens tokenizes special tokens written in message
	// contents ("<|im_end|>") as the model's control tokens. Off by default,
	// so a user cannot forge turns; turn it on only for trusted callers.
	ParseSpecialTokens bool
	// Demo says the model is the random-weight demo model (the web page
	// shows a banner; /health reports "demo": true).
	Demo bool
	// ModelAliases, when set, are the other model names that requests may
	// ask for: a request for any other name than the engine's then gets
	// 404 model_not_found. Without them (or with "*") every name is the
	// served model, as with llama-server.
	ModelAliases []string
	// CORSOrigins are the web origins ("https://app.example.com", or "*"
	// for any) whose pages may call the API from a browser: they get
	// Access-Control-Allow-Origin and answers to preflight OPTIONS
	// requests. Other origins stay refused [none].
	CORSOrigins []string
	// ReadTimeout bounds reading a whole request, body included, so a
	// client that sends its body slowly cannot hold a connection [60s].
	ReadTimeout time.Duration
	// MaxStoredResponses bounds the responses kept for
	// previous_response_id (POST /v1/responses) [256]; -1 keeps none.
	MaxStoredResponses int
	// MaxStoredResponseBytes bounds their text [64 MiB].
	MaxStoredResponseBytes int64
	// Now is the clock, for tests [time.Now].
	Now func() time.Time
	// Embed bounds POST /v1/embeddings and /v1/rerank requests.
	Embed EmbedLimits
	// ReplicaID names this server in the X-Smolgo-Replica header of every
	// response, so that a balancer (or a client) can pin a conversation
	// to the replica that holds its KV cache [the host name; in
	// Kubernetes, the pod's]. "-" sends no header.
	ReplicaID string
}

func (c *Config) defaults() {
	if c.Slots <= 0 {
		c.Slots = 1
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 16
	} else if c.MaxQueue < 0 {
		c.MaxQueue = 0
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxPromptBytes <= 0 {
		c.MaxPromptBytes = 256 << 10
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 32
	}
	switch {
	case c.MaxSessionsPerClient == 0:
		c.MaxSessionsPerClient = max(8, c.MaxSessions/4)
	case c.MaxSessionsPerClient < 0:
		c.MaxSessionsPerClient = 0
	}
	if c.SessionIdle <= 0 {
		c.SessionIdle = 30 * time.Minute
	}
	if c.SessionWait <= 0 {
		c.SessionWait = 5 * time.Second
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 60 * time.Second
	}
	if c.MaxStoredResponses == 0 {
		c.MaxStoredResponses = 256
	} else if c.MaxStoredResponses < 0 {
		c.MaxStoredResponses = 0
	}
	if c.MaxStoredResponseBytes <= 0 {
		c.MaxStoredResponseBytes = 64 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReplicaID == "" {
		c.ReplicaID, _ = os.Hostname()
	}
}

// Server is an http.Handler serving one Engine. Make it with New.
type Server struct {
	engine   Engine
	cfg      Config
	log      *slog.Logger
	sched    *slotQueue
	sessions *sessionStore
	stored   *responseStore // for previous_response_id
	metrics  *metrics
	mux      *http.ServeMux
	started  time.Time
	syntax   toolSyntax // how the model writes tool calls

	slotMu       sync.Mutex
	slotSessions []Session // one engine session per slot, made on first use

	draining     atomic.Bool
	active       atomic.Int64 // generation requests between admission and their answer's end
	loopbackOnly atomic.Bool  // Serve listens on a loopback address only
	// stopGen is cancelled when running generations must stop (shutdown
	// grace expired); every generation's context is tied to it.
	stopGen    context.Context
	cancelGens context.CancelFunc
	inflight   sync.WaitGroup
}

// New returns a Server for e.
func New(e Engine, cfg Config) *Server {
	if o, ok := e.(Occupancy); ok && cfg.Slots <= 0 {
		cfg.Slots = o.Occupancy().MaxSequences
	}
	cfg.defaults()
	s := &Server{
		engine:       e,
		cfg:          cfg,
		log:          cfg.Logger,
		sched:        newSlotQueue(cfg.Slots, cfg.MaxQueue),
		sessions:     newSessionStore(e, cfg.MaxSessions, cfg.MaxSessionsPerClient, cfg.MaxSessionBytes, cfg.SessionIdle, cfg.Now),
		stored:       newResponseStore(cfg.MaxStoredResponses, cfg.MaxStoredResponseBytes),
		metrics:      newMetrics(),
		mux:          http.NewServeMux(),
		started:      cfg.Now(),
		syntax:       syntaxOf(e),
		slotSessions: make([]Session, cfg.Slots),
	}
	s.stopGen, s.cancelGens = context.WithCancel(context.Background())
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("/v1/chat/completions", s.only("POST", s.handleChat))
	s.mux.HandleFunc("/chat/completions", s.only("POST", s.handleChat))
	s.mux.HandleFunc("/v1/completions", s.only("POST", s.handleCompletions))
	s.mux.HandleFunc("/completions", s.only("POST", s.handleCompletions))
	s.mux.HandleFunc("/v1/responses", s.only("POST", s.handleResponses))
	s.mux.HandleFunc("GET /v1/responses/{id}", s.handleGetResponse)
	s.mux.HandleFunc("DELETE /v1/responses/{id}", s.handleDeleteResponse)
	s.mux.HandleFunc("/v1/messages", s.only("POST", s.handleMessages))
	s.mux.HandleFunc("/v1/messages/count_tokens", s.only("POST", s.handleCountTokens))
	s.mux.HandleFunc("/apply-template", s.only("POST", s.handleApplyTemplate))
	s.mux.HandleFunc("/v1/embeddings", s.only("POST", s.handleEmbeddings))
	s.mux.HandleFunc("/embeddings", s.only("POST", s.handleEmbeddings))
	for _, p := range []string{"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"} {
		s.mux.HandleFunc(p, s.only("POST", s.handleRerank))
	}
	s.mux.HandleFunc("/tokenize", s.only("POST", s.handleTokenize))
	s.mux.HandleFunc("/detokenize", s.only("POST", s.handleDetokenize))
	s.mux.HandleFunc("/metrics", s.only("GET", s.handleMetrics))
	s.mux.HandleFunc("/v1/models", s.only("GET", s.handleModels))
	s.mux.HandleFunc("/v1/models/{id}", s.only("GET", s.handleModel))
	s.mux.HandleFunc("/health", s.only("GET", s.handleHealth))
	s.mux.HandleFunc("/livez", s.only("GET", handleLive))
	s.mux.HandleFunc("/readyz", s.only("GET", s.handleReady))
	s.mux.HandleFunc("/api/info", s.only("GET", s.handleInfo))
	s.mux.HandleFunc("/api/sessions", s.only("POST", s.handleNewSession))
	s.mux.HandleFunc("/api/sessions/{id}", s.only("DELETE", s.handleDeleteSession))
	if !s.cfg.DisableUI {
		s.uiRoutes()
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "not_found", Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
}

// only restricts a handler to one method, answering others with a JSON 405.
func (s *Server) only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == "GET" && r.Method == "HEAD") {
			w.Header().Set("Allow", method)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
				Code: "method_not_allowed", Message: r.Method + " is not allowed on " + r.URL.Path + "; use " + method})
			return
		}
		h(w, r)
	}
}

type ctxKey int

const reqIDKey ctxKey = 0

// statusWriter records the status and size of a response for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP implements http.Handler: it assigns a request id, recovers from
// panics with a 500 and logs one line per request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		id = newID("req-")
	}
	w.Header().Set("X-Request-Id", id)
	if s.cfg.ReplicaID != "-" && s.cfg.ReplicaID != "" {
		w.Header().Set(ReplicaHeader, s.cfg.ReplicaID)
	}
	sw := &statusWriter{ResponseWriter: w}
	if s.loopbackOnly.Load() && !loopbackHost(r.Host) {
		// Served on loopback, the server answers only to loopback names,
		// so a web page cannot reach it through DNS rebinding.
		writeError(sw, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "host_not_allowed",
			Message: "host " + r.Host + " is not allowed: this server listens on loopback; use localhost or 127.0.0.1"})
		s.log.Warn("request for a non-loopback host refused", "request_id", id, "host", r.Host)
		return
	}
	if s.cors(sw, r) {
		return // a preflight request, answered
	}
	if crossSite(r, s.cfg.CORSOrigins) {
		// A page on another site may not make this browser spend the
		// model's time (or delete its sessions): browsers send Origin on
		// such requests, API clients and curl do not.
		writeError(sw, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "cross_origin",
			Message: "cross-origin " + r.Method + " from " + r.Header.Get("Origin") + " is not allowed"})
		s.log.Warn("cross-origin request refused", "request_id", id, "origin", r.Header.Get("Origin"), "path", r.URL.Path)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), reqIDKey, id))
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panic", "request_id", id, "panic", p)
			if sw.status == 0 {
				writeError(sw, &apiError{Status: 500, Type: "server_error", Message: "internal server error"})
			}
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		if r.Context().Err() != nil && status == http.StatusOK && sw.bytes == 0 {
			status = 499 // client closed the request before an answer
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		s.metrics.request(r.Pattern, status)
		s.log.Log(r.Context(), level, "http request", "request_id", id, "method", r.Method,
			"path", r.URL.Path, "status", status, "bytes", sw.bytes, "duration", time.Since(start).Round(time.Microsecond))
	}()
	if !probes[r.URL.Path] {
		if s.draining.Load() {
			refuseDraining(sw, r)
			return
		}
		s.active.Add(1) // drain waits for it
		defer s.active.Add(-1)
	}
	s.mux.ServeHTTP(sw, r)
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface: localhost or a loopback IP, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite reports a state-changing request sent by a browser from a page
// of another origin that is not in allowed (Config.CORSOrigins).
func crossSite(r *http.Request, allowed []string) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || corsAllowed(origin, allowed) {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host != r.Host
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(reqIDKey).(string)
	return id
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) { writeErrorAs(w, e, nil) }

// writeErrorAs writes e with body, the API's error shape (nil: OpenAI's).
func writeErrorAs(w http.ResponseWriter, e *apiError, body func(*apiError) any) {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if body == nil {
		writeJSON(w, e.Status, e.body())
		return
	}
	writeJSON(w, e.Status, body(e))
}

// --- small endpoints ---

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if ae := s.checkModel(r.PathValue("id")); ae != nil {
		writeError(w, ae)
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

// checkModel answers a request for model id, on every endpoint that takes
// one (chat, completions, responses, messages, embeddings, rerank, GET
// /v1/models/{id}). The server has one model and serves it whatever name a
// request gives (clients send their defaults: gpt-…, claude-…,
// text-embedding-3-small, rerank-english-v3.0), as llama-server does;
// answers name the served model. With Config.ModelAliases set (and no
// "*"), only the engine's name and the aliases are served, the others 404.
func (s *Server) checkModel(id string) *apiError {
	if id == "" || id == s.engine.ModelName() || len(s.cfg.ModelAliases) == 0 ||
		slices.Contains(s.cfg.ModelAliases, id) || slices.Contains(s.cfg.ModelAliases, "*") {
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model",
		Code: "model_not_found", Message: "model " + id + " does not exist; this server has " + s.engine.ModelName()}
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.engine.ModelName(), "object": "model", "created": s.started.Unix(),
		"owned_by": "smolgo", "context_length": s.engine.ContextLength(), "input_modalities": modalities(s.takesImages())}
}

// takesImages reports whether the engine's model takes images in messages.
func (s *Server) takesImages() bool {
	im, ok := s.engine.(ImageInput)
	return ok && im.TakesImages()
}

// modalities are the input modalities /v1/models lists: "text", and
// "image" for a model that takes images.
func modalities(images bool) []string {
	if images {
		return []string{"text", "image"}
	}
	return []string{"text"}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	busy, queued := s.sched.load(s.cfg.Slots)
	n, bytes := s.sessions.stats()
	body := map[string]any{"status": "ok", "model": s.engine.ModelName(), "slots_idle": s.cfg.Slots - busy,
		"slots_processing": busy, "queued": queued, "sessions": n, "session_bytes": bytes, "demo": s.cfg.Demo}
	if o, ok := s.engine.(Occupancy); ok {
		l := o.Occupancy()
		body["sequences_active"], body["sequences_max"], body["sequences_waiting"] = l.Sequences, l.MaxSequences, l.Waiting
	}
	status := http.StatusOK
	if s.draining.Load() {
		body["status"], status = "shutting down", http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

// handleInfo is the web page's: the model, and its modalities in
// llama-server's /props shape ({"vision": true} shows the page's image
// button).
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"model": s.engine.ModelName(),
		"context_length": s.engine.ContextLength(), "slots": s.cfg.Slots, "max_queue": s.cfg.MaxQueue,
		"max_prompt_bytes": s.cfg.MaxPromptBytes, "max_body_bytes": s.cfg.MaxBodyBytes,
		"modalities": map[string]bool{"vision": s.takesImages()}})
}

func (s *Server) handleNewSession(w http.ResponseWriter, r *http.Request) {
	id, err := s.sessions.create(clientAddr(r))
	if errors.Is(err, errClientSessions) {
		w.Header().Set("Retry-After", "5")
		writeError(w, &apiError{Status: http.StatusTooManyRequests, Type: "invalid_request_error", Code: "too_many_sessions", Message: err.Error()})
		return
	}
	if err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "too_many_sessions", Message: err.Error()})
		return
	}
	s.log.Info("session created", "request_id", requestID(r.Context()), "session", id)
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// clientAddr is the client's IP address, for per-client bounds (the
// connection's: a header could name anyone).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	if !s.sessions.remove(r.PathValue("id")) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "session_id",
			Code: "session_not_found", Message: errSessionNotFound.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- lifecycle ---

// ListenAndServe listens on addr (host:port; port 0 picks one) and serves
// until ctx ends; see Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then drains (see lifecycle.go): new
// requests get 503 with Retry-After while the listener stays open and the
// requests already admitted, streams included, get Config.ShutdownGrace to
// finish; then the listener closes, what still runs is cancelled, and
// Serve returns once every handler has returned. It also evicts idle
// sessions once a minute while serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// The whole request, body included; the deadline is lifted once
		// the handler has read the body, so long answers still stream.
		ReadTimeout: s.cfg.ReadTimeout,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("serving", "addr", ln.Addr().String(), "model", s.engine.ModelName(),
		"context", s.engine.ContextLength(), "slots", s.cfg.Slots, "max_queue", s.cfg.MaxQueue)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		s.loopbackOnly.Store(true)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			s.cancelGens()
			return err
		case <-tick.C:
			s.sessions.mu.Lock()
			s.sessions.evictLocked(0)
			s.sessions.mu.Unlock()
			continue
		case <-ctx.Done():
		}
		break
	}
	return s.shutdown(hs, errc)
}

func (s *Server) shutdown(hs *http.Server, errc chan error) error {
	s.draining.Store(true)
	busy, queued := s.sched.load(s.cfg.Slots)
	s.log.Info("draining", "running", busy, "queued", queued, "requests", s.active.Load(), "grace", s.cfg.ShutdownGrace)
	deadline := time.Now().Add(s.cfg.ShutdownGrace)
	s.drain(deadline)
	s.log.Info("shutting down", "requests_left", s.active.Load())
	graceCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err := hs.Shutdown(graceCtx)
	if err != nil {
		// Grace expired: stop the generations; their handlers then end
		// their streams and return.
		s.log.Warn("shutdown grace expired; cancelling running generations")
		s.cancelGens()
		done := make(chan struct{})
		go func() { s.inflight.Wait(); close(done) }()
		select {
		case <-done:
			// Let the handlers' responses end cleanly, then close.
			finalCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = hs.Shutdown(finalCtx)
			cancel()
		case <-time.After(5 * time.Second):
			s.log.Error("generations did not stop within 5s after cancellation; closing connections")
		}
		if err != nil {
			err = hs.Close()
		}
	}
	s.cancelGens()
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	s.log.Info("server stopped")
	return err
}
