package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A server's life as a balancer or an orchestrator sees it:
//
//	loading   ServeLoading answers while the model loads: GET /livez 200,
//	          GET /health and /readyz 503 {"error": {"code": 503,
//	          "message": "Loading model"}} (llama-server's answer, which
//	          clients probe for), everything else 503 with Retry-After.
//	ready     Serve: /health, /readyz and /livez 200.
//	draining  Serve's context ended (SIGTERM): /health and /readyz 503,
//	          /livez still 200; every new request 503 with Retry-After
//	          and Connection: close, while the listener stays open and
//	          the requests already admitted (streams included) run to
//	          their end, for at most Config.ShutdownGrace.
//	stopped   then the listener closes; what still runs at the deadline
//	          is cancelled (a stream gets an error event and [DONE]).
//
// /livez is liveness (restart the process if it fails), /readyz readiness
// (send it traffic): a Kubernetes pod that loads a model for a minute, or
// drains for one, stays alive and out of the Service meanwhile. /health is
// llama-server's, for clients that probe it.

// ReplicaHeader names the replica that answered (Config.ReplicaID), on
// every response.
const ReplicaHeader = "X-Smolgo-Replica"

// probes are the paths answered while draining (and not counted as work
// to wait for).
var probes = map[string]bool{"/health": true, "/livez": true, "/readyz": true, "/metrics": true}

// handleLive serves GET /livez: the process serves HTTP.
func handleLive(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady serves GET /readyz: 200 while the server takes requests, 503
// while it drains.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// refuseDraining answers a request that arrives while the server drains:
// 503 with Retry-After (a balancer retries elsewhere) and Connection:
// close, in the API's error shape.
func refuseDraining(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	ae := &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
		Message: "server is shutting down; retry on another replica"}
	var body func(*apiError) any
	if strings.HasPrefix(r.URL.Path, "/v1/messages") {
		body = anthropicErrorBody
	}
	writeErrorAs(w, ae, body)
}

// drain waits, up to deadline, for the requests admitted before draining
// began to end; new ones are refused meanwhile (ServeHTTP).
func (s *Server) drain(deadline time.Time) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.active.Load() > 0 && time.Now().Before(deadline) {
		<-tick.C
	}
}

// loadingBody is llama-server's answer while it loads a model.
var loadingBody = map[string]any{"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}}

// Loading is the handler ServeLoading serves while a model loads.
func Loading(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/livez":
		handleLive(w, r)
		return
	case "/health", "/readyz":
	default:
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, http.StatusServiceUnavailable, loadingBody)
}

// ServeLoading answers on ln with Loading until stop is called, so that a
// process that listens before it loads its model (as a Kubernetes pod
// should, for its probes) tells clients to wait instead of refusing them.
// stop (which may be called more than once) returns once no request is
// served any more and leaves ln open and its address bound, for Serve: connections that arrive in between wait in
// the listen queue. ln must be a *net.TCPListener or *net.UnixListener (a
// deadline ends the accept); for other listeners ServeLoading serves
// nothing and stop does nothing.
func ServeLoading(ln net.Listener, log *slog.Logger) (stop func()) {
	dl, ok := ln.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return func() {}
	}
	if log == nil {
		log = slog.Default()
	}
	hs := &http.Server{Handler: http.HandlerFunc(Loading), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // "Accept error" at stop is expected
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(keepOpen{ln})
	}()
	end := stopLoading(hs, dl, done)
	var once sync.Once
	return func() { once.Do(end) }
}

// stopLoading ends ServeLoading's server, leaving ln open.
func stopLoading(hs *http.Server, dl interface{ SetDeadline(time.Time) error }, done chan struct{}) func() {
	return func() {
		// The deadline wakes Serve's Accept (Serve retries it until it
		// sees the shutdown); Shutdown closes idle connections and waits
		// for the rest, and keepOpen keeps ln open for the next Serve.
		dl.SetDeadline(time.Unix(1, 0))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		<-done
		dl.SetDeadline(time.Time{})
	}
}

// keepOpen is a listener whose Close leaves the listener open.
type keepOpen struct{ net.Listener }

func (keepOpen) Close() error { return nil }
