package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// A Router serves several models from one process, as one http.Handler: the
// request's "model" field picks the model, each model is loaded on its
// first request and unloaded when it has been idle for RouterConfig.IdleTTL
// or when another needs its memory (RouterConfig.MaxBytes), least recently
// used first; a pinned model is loaded at start and stays. Each loaded model
// is served by its own Server (its own slots, queue, sessions and prompt
// cache), so everything a Server does it does per model; the Router adds
// the routing and the models' lifecycle (modelpool.go).
//
//	specs := []server.ModelSpec{
//		{Name: "smollm3", Kind: server.KindChat, Bytes: size1, Load: loadSmolLM3},
//		{Name: "bge-small", Kind: server.KindEmbedding, Bytes: size2, Load: loadBGE, Pinned: true},
//	}
//	rt, err := server.NewRouter(specs, server.RouterConfig{Server: cfg, IdleTTL: 15 * time.Minute, MaxBytes: 8 << 30})
//	defer rt.Close()
//	err = rt.ListenAndServe(ctx, "127.0.0.1:8080")
//
// Routing:
//
//   - A POST to a model endpoint (chat, completions, responses, messages,
//     embeddings, rerank, tokenize, the web chat's sessions) goes to the
//     model its body's "model" names (or ?model= in the URL). With one model
//     configured, any name is that model, as with a Server; with several,
//     an unknown name is a 404 model_not_found that lists them, and no name
//     means the first model of the endpoint's kind (chat, embedding,
//     rerank) in the order given.
//   - GET /v1/models (and llama-server's /models) lists every model with its
//     kind and state (unloaded, loading, loaded, unloading); POST
//     /models/load and /models/unload {"model": name} load or unload one,
//     as llama-server's router mode does.
//   - GET /health answers for the process: 503 while a pinned model is
//     loading or has failed to load and while shutting down, else 200, with
//     every model's state; /health?model=NAME for one model (the web page's
//     footer). GET /readyz is readiness by the same rule (200 "ready", else
//     503 with the reason) and /livez liveness (200 while the process
//     serves), the paths deploy/'s probes ask, as a Server answers them. /metrics has every model's series, labelled model="NAME",
//     and the pool's own: loads, unloads, memory.
//   - Stored responses (previous_response_id) are shared by all the models
//     and survive their unloading; web-chat sessions belong to their model
//     and go when it unloads (the page then makes a new one).
//
// A request for an unloaded model waits for its load (with every other
// request for it: they share one); a load that fails answers them 500
// model_load_failed with the loader's error, and the next request tries
// again. The Router's Config.Server applies to every model (slots, queue,
// sessions, sampler) and to the front door (Logger, CORSOrigins,
// ReadTimeout, ShutdownGrace, DisableUI, MaxBodyBytes).
type Router struct {
	cfg     RouterConfig // with the defaults filled in
	srvCfg  Config       // Config.Server as given, for each model's New
	log     *slog.Logger
	pool    *modelPool
	stored  *responseStore
	mux     *http.ServeMux
	ui      http.Handler
	started time.Time
	stop    chan struct{} // closes the sweeper
	swept   chan struct{}

	draining     atomic.Bool
	loopbackOnly atomic.Bool
	closed       atomic.Bool
}

// ModelKind is what a model serves, which decides the endpoint it is the
// default for: chat (the generation endpoints and the web page), embedding
// (POST /v1/embeddings) or rerank (POST /v1/rerank).
type ModelKind string

// The kinds of model.
const (
	KindChat      ModelKind = "chat"
	KindEmbedding ModelKind = "embedding"
	KindRerank    ModelKind = "rerank"
)

// ModelSpec is one model a Router serves.
type ModelSpec struct {
	// Name is the model's id: what requests put in "model" and /v1/models
	// lists.
	Name string
	// Kind is what the model serves.
	Kind ModelKind
	// Bytes is the model's size once loaded, before any KV cache: its
	// file's size, as the file is mapped. It counts against
	// RouterConfig.MaxBytes from the moment the model starts loading; the
	// KV caches are added as they are measured.
	Bytes int64
	// Pinned models are loaded when the Router starts and never unloaded.
	Pinned bool
	// Images says that the model takes images in messages (a chat model
	// loaded with a vision projector): /v1/models and the web page say so
	// before it is loaded. Once it is loaded its engine says (ImageInput).
	Images bool
	// Load loads the model and returns its engine and a function that
	// closes it (called once the engine has served its last request). ctx
	// ends when the Router closes. It runs in its own goroutine, beside
	// the other models' requests.
	Load func(ctx context.Context) (Engine, func(), error)
}

// RouterConfig configures a Router.
type RouterConfig struct {
	// Server configures each model's Server, and the Router's front door
	// (see Router). Its ModelAliases and Demo are not used.
	Server Config
	// IdleTTL unloads a model (not a pinned one) that has served no
	// request for this long [0: never].
	IdleTTL time.Duration
	// MaxBytes bounds the memory of the loaded models: their files plus
	// their KV caches, as measured [0: no bound]. A model that does not fit
	// beside the pinned ones fails to load.
	MaxBytes int64
}

// NewRouter returns a Router for the models in specs, which it starts
// loading the pinned ones of. Close it when done.
func NewRouter(specs []ModelSpec, cfg RouterConfig) (*Router, error) {
	if len(specs) == 0 {
		return nil, errors.New("server: NewRouter needs at least one model")
	}
	seen := make(map[string]bool)
	for i, s := range specs {
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("server: model %d has no name", i)
		case seen[s.Name]:
			return nil, fmt.Errorf("server: two models are named %q", s.Name)
		case s.Load == nil:
			return nil, fmt.Errorf("server: model %s has no Load function", s.Name)
		case s.Kind != KindChat && s.Kind != KindEmbedding && s.Kind != KindRerank:
			return nil, fmt.Errorf("server: model %s has kind %q; want %q, %q or %q", s.Name, s.Kind, KindChat, KindEmbedding, KindRerank)
		case s.Bytes < 0:
			return nil, fmt.Errorf("server: model %s has a negative size", s.Name)
		}
		seen[s.Name] = true
	}
	srvCfg := cfg.Server
	cfg.Server.defaults()
	rt := &Router{cfg: cfg, srvCfg: srvCfg, log: cfg.Server.Logger, mux: http.NewServeMux(), started: cfg.Server.Now(),
		stored: newResponseStore(cfg.Server.MaxStoredResponses, cfg.Server.MaxStoredResponseBytes),
		stop:   make(chan struct{}), swept: make(chan struct{})}
	rt.pool = newModelPool(specs, cfg, rt.newServer)
	if cfg.MaxBytes > 0 {
		var pinned int64
		for _, s := range specs {
			if s.Pinned {
				pinned += s.Bytes
			}
		}
		if pinned > cfg.MaxBytes {
			return nil, fmt.Errorf("server: the pinned models' files take %s, more than the memory bound of %s", fmtBytes(pinned), fmtBytes(cfg.MaxBytes))
		}
	}
	rt.routes()
	for _, m := range rt.pool.order {
		if m.spec.Pinned {
			rt.pool.mu.Lock()
			if m.state == stateUnloaded {
				rt.pool.startLoadLocked(m, "pinned")
			}
			rt.pool.mu.Unlock()
		}
	}
	go rt.sweeper()
	return rt, nil
}

// newServer makes the Server of a model that just loaded: the Router's
// config, the model's metrics (kept across its loads) and the Router's
// store of responses (shared by all models).
func (rt *Router) newServer(m *pooledModel, e Engine) *Server {
	cfg := rt.srvCfg // Slots 0 still means the engine's batch size
	cfg.Logger = rt.log.With("model", m.spec.Name)
	cfg.Now = rt.cfg.Server.Now
	cfg.DisableUI = true // the Router serves the page
	cfg.ModelAliases = []string{"*"}
	cfg.Demo = false
	srv := New(e, cfg)
	srv.metrics = m.metrics
	srv.stored = rt.stored
	return srv
}

// sweepEvery is how often the Router looks for idle models and
// conversations: a quarter of the TTL, between a second and 30 seconds.
func (rt *Router) sweepEvery() time.Duration {
	d := 30 * time.Second
	if ttl := rt.cfg.IdleTTL; ttl > 0 {
		d = min(max(ttl/4, time.Second), d)
	}
	return d
}

func (rt *Router) sweeper() {
	defer close(rt.swept)
	t := time.NewTicker(rt.sweepEvery())
	defer t.Stop()
	for {
		select {
		case <-t.C:
			rt.pool.sweep()
		case <-rt.stop:
			return
		}
	}
}

// Close unloads every model, once its running requests have ended, and
// waits for loads in progress to stop. Call it after Serve has returned.
func (rt *Router) Close() error {
	if rt.closed.Swap(true) {
		return nil
	}
	close(rt.stop)
	<-rt.swept
	rt.pool.close()
	return nil
}

// modelRoutes are the POST endpoints served by a model, and the kind of
// model a request without a "model" goes to.
var modelRoutes = []struct {
	path string
	kind ModelKind
}{
	{"/v1/chat/completions", KindChat}, {"/chat/completions", KindChat},
	{"/v1/completions", KindChat}, {"/completions", KindChat},
	{"/v1/responses", KindChat},
	{"/v1/messages", KindChat}, {"/v1/messages/count_tokens", KindChat},
	{"/apply-template", KindChat}, {"/tokenize", KindChat}, {"/detokenize", KindChat},
	{"/api/sessions", KindChat},
	{"/v1/embeddings", KindEmbedding}, {"/embeddings", KindEmbedding},
	{"/v1/rerank", KindRerank}, {"/rerank", KindRerank}, {"/v1/reranking", KindRerank}, {"/reranking", KindRerank},
}

func (rt *Router) routes() {
	for _, mr := range modelRoutes {
		rt.mux.HandleFunc(mr.path, rt.forward(mr.kind))
	}
	rt.mux.HandleFunc("GET /v1/models", rt.handleModels)
	rt.mux.HandleFunc("GET /models", rt.handleModels)
	rt.mux.HandleFunc("GET /v1/models/{id}", rt.handleModel)
	rt.mux.HandleFunc("POST /models/load", rt.handleLoad)
	rt.mux.HandleFunc("POST /models/unload", rt.handleUnload)
	rt.mux.HandleFunc("GET /health", rt.handleHealth)
	rt.mux.HandleFunc("GET /livez", handleLive)
	rt.mux.HandleFunc("GET /readyz", rt.handleReady)
	rt.mux.HandleFunc("GET /metrics", rt.handleMetrics)
	rt.mux.HandleFunc("GET /api/info", rt.handleInfo)
	rt.mux.HandleFunc("DELETE /api/sessions/{id}", rt.handleDeleteSession)
	rt.mux.HandleFunc("GET /v1/responses/{id}", rt.handleGetResponse)
	rt.mux.HandleFunc("DELETE /v1/responses/{id}", rt.handleDeleteResponse)
	if !rt.cfg.Server.DisableUI {
		rt.ui = uiHandler()
		rt.mux.Handle("GET /{$}", rt.ui)
		for _, name := range uiFiles {
			rt.mux.Handle("GET "+name, rt.ui)
		}
	}
	rt.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "not_found", Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
}

// ServeHTTP implements http.Handler. The front door is a Server's (request
// id, loopback Host check, CORS, cross-site refusal); a model's requests
// are then logged by that model's Server, and the Router's own by the
// Router.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		id = newID("req-")
		r.Header.Set("X-Request-Id", id) // the model's Server keeps it
	}
	w.Header().Set("X-Request-Id", id)
	sw := &statusWriter{ResponseWriter: w}
	if rt.loopbackOnly.Load() && !loopbackHost(r.Host) {
		writeError(sw, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "host_not_allowed",
			Message: "host " + r.Host + " is not allowed: this server listens on loopback; use localhost or 127.0.0.1"})
		rt.log.Warn("request for a non-loopback host refused", "request_id", id, "host", r.Host)
		return
	}
	if corsPreflight(sw, r, rt.cfg.Server.CORSOrigins) {
		return
	}
	if crossSite(r, rt.cfg.Server.CORSOrigins) {
		writeError(sw, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "cross_origin",
			Message: "cross-origin " + r.Method + " from " + r.Header.Get("Origin") + " is not allowed"})
		rt.log.Warn("cross-origin request refused", "request_id", id, "origin", r.Header.Get("Origin"), "path", r.URL.Path)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), reqIDKey, id))
	var forwarded bool
	r = r.WithContext(context.WithValue(r.Context(), forwardedKey, &forwarded))
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			rt.log.Error("handler panic", "request_id", id, "panic", p)
			if sw.status == 0 {
				writeError(sw, &apiError{Status: 500, Type: "server_error", Message: "internal server error"})
			}
		}
		if forwarded {
			return // the model's Server logged it
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		rt.log.Log(r.Context(), level, "http request", "request_id", id, "method", r.Method,
			"path", r.URL.Path, "status", status, "bytes", sw.bytes, "duration", time.Since(start).Round(time.Microsecond))
	}()
	rt.mux.ServeHTTP(sw, r)
}

const forwardedKey ctxKey = 1

// corsPreflight is Server.cors for the Router's origins.
func corsPreflight(w http.ResponseWriter, r *http.Request, origins []string) bool {
	return (&Server{cfg: Config{CORSOrigins: origins}}).cors(w, r)
}

// forward serves a model endpoint: it finds the model the request names,
// loads it if need be and hands the request to its Server.
func (rt *Router) forward(kind ModelKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		errBody := errorShape(r.URL.Path)
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeErrorAs(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
				Code: "method_not_allowed", Message: r.Method + " is not allowed on " + r.URL.Path + "; use POST"}, errBody)
			return
		}
		if rt.draining.Load() {
			writeErrorAs(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
				Code: "shutting_down", Message: "server is shutting down"}, errBody)
			return
		}
		name, err := rt.peekModel(w, r)
		if err != nil {
			writeErrorAs(w, decodeError(err, rt.cfg.Server.MaxBodyBytes), errBody)
			return
		}
		m, ae := rt.lookup(name, kind)
		if ae != nil {
			writeErrorAs(w, ae, errBody)
			return
		}
		srv, release, err := rt.pool.acquire(r.Context(), m, "request")
		if err != nil {
			if r.Context().Err() != nil {
				return // the client left while the model loaded
			}
			writeErrorAs(w, apiErrorOf(err), errBody)
			return
		}
		defer release()
		*r.Context().Value(forwardedKey).(*bool) = true
		srv.ServeHTTP(unwrapStatus(w), r)
	}
}

// unwrapStatus returns the ResponseWriter under the Router's statusWriter,
// so that the model's Server, which wraps its own, sees the connection's
// (http.ResponseController finds Flush and deadlines through Unwrap either
// way; this only saves a layer).
func unwrapStatus(w http.ResponseWriter) http.ResponseWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw.ResponseWriter
	}
	return w
}

// errorShape is the error body of an endpoint's API: Anthropic's for the
// Messages API, OpenAI's (nil) for the rest.
func errorShape(path string) func(*apiError) any {
	if strings.HasPrefix(path, "/v1/messages") {
		return anthropicErrorBody
	}
	return nil
}

// peekModel reads the "model" a request names: ?model= in the URL, else
// the body's "model" field. It reads the body (at most MaxBodyBytes of it)
// and puts it back for the model's Server, which then reads and checks it
// as it would without the Router (a body that is not JSON, or too long,
// gets that Server's answer in its API's shape).
func (rt *Router) peekModel(w http.ResponseWriter, r *http.Request) (string, error) {
	if name := r.URL.Query().Get("model"); name != "" {
		return name, nil
	}
	limit := rt.cfg.Server.MaxBodyBytes
	buf, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if int64(len(buf)) > limit {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), r.Body))
		return "", nil
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	var v struct {
		Model any `json:"model"`
	}
	if json.Unmarshal(buf, &v) == nil {
		if s, ok := v.Model.(string); ok {
			return s, nil
		}
	}
	return "", nil
}

// lookup finds the model a request names (see Router for the rules).
func (rt *Router) lookup(name string, kind ModelKind) (*pooledModel, *apiError) {
	order := rt.pool.order
	if len(order) == 1 {
		return order[0], nil
	}
	if name == "" {
		for _, m := range order {
			if m.spec.Kind == kind {
				return m, nil
			}
		}
		return order[0], nil // its Server says what it cannot do
	}
	if m, ok := rt.pool.models[name]; ok {
		return m, nil
	}
	return nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("model %q does not exist; this server has %s", name, strings.Join(rt.names(), ", "))}
}

func (rt *Router) names() []string {
	var names []string
	for _, m := range rt.pool.order {
		names = append(names, m.spec.Name)
	}
	return names
}

// modelView is a model as the Router's endpoints describe it.
type modelView struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	OwnedBy string    `json:"owned_by"`
	Kind    ModelKind `json:"kind"`
	// State is unloaded, loading, loaded or unloading; Status is the same
	// in llama-server's router shape.
	State  string `json:"state"`
	Status struct {
		Value string `json:"value"`
	} `json:"status"`
	Pinned bool `json:"pinned"`
	// InputModalities are "text", and "image" for a model that takes
	// images (as a Server's /v1/models and llama-server's router list them).
	InputModalities []string `json:"input_modalities"`
	FileBytes       int64    `json:"file_bytes"`
	MemoryBytes     int64    `json:"memory_bytes"`             // file and KV caches, while loaded (or loading, once admitted under the bound)
	ContextLength   int      `json:"context_length,omitempty"` // while loaded
	Requests        int      `json:"running_requests"`
	LastError       string   `json:"last_error,omitempty"` // of the last load, when it failed
}

func (rt *Router) viewLocked(m *pooledModel) modelView {
	v := modelView{ID: m.spec.Name, Object: "model", Created: rt.started.Unix(), OwnedBy: "smolgo", Kind: m.spec.Kind,
		State: m.state.String(), Pinned: m.spec.Pinned, FileBytes: m.spec.Bytes, MemoryBytes: m.heldLocked(), Requests: m.active}
	v.Status.Value = v.State
	images := m.spec.Images
	if m.state == stateLoaded {
		v.ContextLength = m.srv.engine.ContextLength()
		if im, ok := m.srv.engine.(ImageInput); ok {
			images = im.TakesImages()
		}
	}
	v.InputModalities = modalities(images)
	if m.lastErr != nil {
		v.LastError = m.lastErr.Error()
	}
	return v
}

func (rt *Router) views() []modelView {
	rt.pool.mu.Lock()
	defer rt.pool.mu.Unlock()
	var out []modelView
	for _, m := range rt.pool.order {
		out = append(out, rt.viewLocked(m))
	}
	return out
}

func (rt *Router) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": rt.views()})
}

func (rt *Router) handleModel(w http.ResponseWriter, r *http.Request) {
	m, ok := rt.pool.models[r.PathValue("id")]
	if !ok {
		_, ae := rt.lookup(r.PathValue("id"), KindChat)
		if ae == nil { // one model: any name is it
			m = rt.pool.order[0]
		} else {
			writeError(w, ae)
			return
		}
	}
	rt.pool.mu.Lock()
	v := rt.viewLocked(m)
	rt.pool.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

// modelOfBody reads {"model": name} (POST /models/load, /models/unload).
func (rt *Router) modelOfBody(w http.ResponseWriter, r *http.Request) (*pooledModel, *apiError) {
	var req struct {
		Model string `json:"model"`
	}
	if err := decodeBody(w, r, rt.cfg.Server.MaxBodyBytes, &req); err != nil {
		return nil, decodeError(err, rt.cfg.Server.MaxBodyBytes)
	}
	m, ok := rt.pool.models[req.Model]
	if !ok {
		return nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q does not exist; this server has %s", req.Model, strings.Join(rt.names(), ", "))}
	}
	return m, nil
}

// handleLoad loads a model and answers once it is loaded (llama-server's
// POST /models/load). It then stays until its idle TTL or the memory bound
// unloads it.
func (rt *Router) handleLoad(w http.ResponseWriter, r *http.Request) {
	m, ae := rt.modelOfBody(w, r)
	if ae != nil {
		writeError(w, ae)
		return
	}
	_, release, err := rt.pool.acquire(r.Context(), m, "request")
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
	}
	release()
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "model": m.spec.Name})
}

// handleUnload starts unloading a model (llama-server's POST
// /models/unload): its running requests finish first.
func (rt *Router) handleUnload(w http.ResponseWriter, r *http.Request) {
	m, ae := rt.modelOfBody(w, r)
	if ae != nil {
		writeError(w, ae)
		return
	}
	if err := rt.pool.unloadByRequest(m); err != nil {
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "model": m.spec.Name})
}

// handleHealth answers for the process, or with ?model= for one model
// (which it does not load).
func (rt *Router) handleHealth(w http.ResponseWriter, r *http.Request) {
	if name := r.URL.Query().Get("model"); name != "" {
		m, ae := rt.lookup(name, KindChat)
		if ae != nil {
			writeError(w, ae)
			return
		}
		rt.modelHealth(w, m)
		return
	}
	views := rt.views()
	status, code := rt.readiness(views)
	if status == "ready" {
		status = "ok"
	}
	rt.pool.mu.Lock()
	used := rt.pool.heldTotalLocked()
	rt.pool.mu.Unlock()
	writeJSON(w, code, map[string]any{"status": status, "models": views, "memory_bytes": used, "max_memory_bytes": rt.cfg.MaxBytes})
}

// readiness is the process's state for /health and /readyz: "loading"
// (503) while a pinned model loads, "error" (503) when one failed to load,
// "shutting down" (503) while draining, else "ready" (200). Models that are
// not pinned load on their first request, so they do not hold it back.
func (rt *Router) readiness(views []modelView) (string, int) {
	status, code := "ready", http.StatusOK
	for _, v := range views {
		if v.Pinned && v.State != "loaded" {
			status, code = "loading", http.StatusServiceUnavailable
			if v.LastError != "" {
				status = "error"
			}
		}
	}
	if rt.draining.Load() {
		status, code = "shutting down", http.StatusServiceUnavailable
	}
	return status, code
}

// handleReady serves GET /readyz for the process, as a Server does for its
// model: 200 when it takes requests (readiness), else 503 with the reason.
// GET /livez is 200 while the process serves HTTP (liveness), whatever
// the models do.
func (rt *Router) handleReady(w http.ResponseWriter, r *http.Request) {
	status, code := rt.readiness(rt.views())
	writeJSON(w, code, map[string]string{"status": status})
}

// modelHealth is a model's /health: a loaded model's Server's numbers, or
// its state.
func (rt *Router) modelHealth(w http.ResponseWriter, m *pooledModel) {
	rt.pool.mu.Lock()
	srv, state := m.srv, m.state
	if state != stateLoaded {
		srv = nil
	}
	rt.pool.mu.Unlock()
	body := map[string]any{"status": "ok", "model": m.spec.Name, "kind": m.spec.Kind, "state": state.String(),
		"slots_processing": 0, "queued": 0}
	if srv != nil {
		busy, queued := srv.sched.load(srv.cfg.Slots)
		n, bytes := srv.sessions.stats()
		body["slots_idle"], body["slots_processing"], body["queued"] = srv.cfg.Slots-busy, busy, queued
		body["sessions"], body["session_bytes"] = n, bytes
		if o, ok := srv.engine.(Occupancy); ok {
			l := o.Occupancy()
			body["sequences_active"], body["sequences_max"], body["sequences_waiting"] = l.Sequences, l.MaxSequences, l.Waiting
		}
	}
	code := http.StatusOK
	if rt.draining.Load() {
		body["status"], code = "shutting down", http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// handleInfo is the web page's: the models it may pick from (chat models
// first; each view's input_modalities says whether it takes images) and
// the default one.
func (rt *Router) handleInfo(w http.ResponseWriter, r *http.Request) {
	views := rt.views()
	def := views[0].ID
	for _, v := range views {
		if v.Kind == KindChat {
			def = v.ID
			break
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": def, "models": views,
		"max_prompt_bytes": rt.cfg.Server.MaxPromptBytes, "max_queue": rt.cfg.Server.MaxQueue,
		"max_body_bytes": rt.cfg.Server.MaxBodyBytes})
}

// loadedServers returns the Servers of the loaded models.
func (rt *Router) loadedServers() []*Server {
	rt.pool.mu.Lock()
	defer rt.pool.mu.Unlock()
	var out []*Server
	for _, m := range rt.pool.order {
		if m.srv != nil {
			out = append(out, m.srv)
		}
	}
	return out
}

// handleDeleteSession deletes a web-chat session in whichever loaded model
// holds it (a session of an unloaded model is gone already).
func (rt *Router) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, srv := range rt.loadedServers() {
		if srv.sessions.remove(id) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "session_id",
		Code: "session_not_found", Message: errSessionNotFound.Error()})
}

func (rt *Router) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	(&Server{stored: rt.stored}).handleGetResponse(w, r)
}

func (rt *Router) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	(&Server{stored: rt.stored}).handleDeleteResponse(w, r)
}

// kvBytes is the memory of a Server's KV caches: the slots' sessions, the
// web chat's and the engine's prompt cache.
func (s *Server) kvBytes() int64 {
	_, n := s.sessions.stats()
	s.slotMu.Lock()
	for _, ss := range s.slotSessions {
		if ss != nil {
			n += ss.MemoryBytes()
		}
	}
	s.slotMu.Unlock()
	if pc, ok := s.engine.(PromptCaching); ok {
		if st, ok := pc.PromptCacheStats(); ok {
			n += st.Bytes
		}
	}
	return n
}

// --- lifecycle ---

// ListenAndServe listens on addr and serves until ctx ends; see Serve.
func (rt *Router) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then shuts down as a Server does:
// new requests are refused, running ones get Config.ShutdownGrace to
// finish, then every model's generations are cancelled. It does not close
// the models: Close does.
func (rt *Router) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           rt,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       rt.cfg.Server.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(rt.log.Handler(), slog.LevelWarn),
	}
	rt.log.Info("serving", "addr", ln.Addr().String(), "models", strings.Join(rt.names(), ","),
		"idle_ttl", rt.cfg.IdleTTL, "max_bytes", rt.cfg.MaxBytes)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		rt.loopbackOnly.Store(true)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	rt.draining.Store(true)
	for _, srv := range rt.loadedServers() {
		srv.draining.Store(true)
	}
	rt.log.Info("shutting down", "grace", rt.cfg.Server.ShutdownGrace)
	graceCtx, cancel := context.WithTimeout(context.Background(), rt.cfg.Server.ShutdownGrace)
	defer cancel()
	err := hs.Shutdown(graceCtx)
	if err != nil {
		rt.log.Warn("shutdown grace expired; cancelling running generations")
		for _, srv := range rt.loadedServers() {
			srv.cancelGens()
		}
		finalCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(finalCtx)
		cancel()
		if err != nil {
			err = hs.Close()
		}
	}
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	rt.log.Info("server stopped")
	return err
}
