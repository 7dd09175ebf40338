package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// The model pool is the Router's memory: which models are loaded, which are
// loading or unloading, who is using them, and what they hold. Everything
// is guarded by one mutex that is never held while a model loads, unloads
// or serves, so a slow load of one model never stalls requests to the
// others. A model goes through
//
//	unloaded ──acquire──▶ loading ──ok──▶ loaded ──TTL, memory, /models/unload──▶ unloading ──▶ unloaded
//	                         └──failed──▶ unloaded
//
// The rules that keep requests safe across those moves:
//
//   - Requests that find a model unloaded or loading wait for one shared
//     load (a loadCall); when it succeeds they are counted as its users
//     before anyone else can see it loaded, so a model cannot be evicted
//     between its load and the requests it was loaded for. When it fails
//     they all get its error; the next request tries again.
//   - A model being unloaded admits no new request (those wait for the
//     unload and then load it again) and is closed only once its running
//     requests have finished: no request is cut short by an unload.
//   - Memory: each model counts its file (mapped when loaded) plus its KV
//     caches as they are measured (after each request and on every sweep).
//     A load first reserves its file's size; if that takes the total over
//     RouterConfig.MaxBytes, models are unloaded least recently used first,
//     idle ones before busy ones (which finish their requests first), never
//     a pinned one, and the load waits until they are closed. Loads that
//     run at once are ordered by when they started: a later one counts the
//     earlier ones' reservations and waits for them to end when it cannot
//     make room otherwise, and the earlier ones ignore it, so two loads
//     never wait for each other. After a request, a model whose caches grew
//     past the bound makes idle models go, least recently used first.

// modelState is where a model is in its life.
type modelState int

const (
	stateUnloaded modelState = iota
	stateLoading
	stateLoaded
	stateUnloading
)

func (s modelState) String() string {
	return [...]string{"unloaded", "loading", "loaded", "unloading"}[s]
}

// pooledModel is one ModelSpec and its state. All fields below spec are
// guarded by modelPool.mu.
type pooledModel struct {
	spec    ModelSpec
	metrics *metrics // kept across loads, so /metrics counters do not restart

	state    modelState
	srv      *Server   // while loaded or unloading
	closeFn  func()    // closes the engine
	call     *loadCall // the load in progress
	active   int       // requests using srv
	lastUsed time.Time
	kvBytes  int64         // the KV caches, last measured
	loadSeq  uint64        // while loading: the order in which loads started
	admitted bool          // while loading: room was made, the load runs
	drained  chan struct{} // while unloading with requests running: closed when the last one ends
	unloaded chan struct{} // while unloading: closed when the model is closed

	loads, failures int64            // counters for /metrics
	unloads         map[string]int64 // by reason
	loadTime        time.Duration
	lastErr         error // the last load's error, nil after a success
}

// loadCall is one load that any number of requests wait for.
type loadCall struct {
	done    chan struct{} // closed when the load has ended
	err     error
	srv     *Server
	waiters int // requests counted as users when it succeeds
}

// bytesLocked is what the model counts against the memory bound: its file
// and its KV caches while loaded or unloading, its file's size (reserved)
// while loading.
func (m *pooledModel) bytesLocked() int64 {
	if m.state == stateUnloaded {
		return 0
	}
	return m.spec.Bytes + m.kvBytes
}

// heldLocked is the memory the model holds: bytesLocked, but nothing for a
// load that still waits for room.
func (m *pooledModel) heldLocked() int64 {
	if m.state == stateLoading && !m.admitted {
		return 0
	}
	return m.bytesLocked()
}

// modelPool loads, shares and unloads the Router's models.
type modelPool struct {
	cfg      RouterConfig
	log      *slog.Logger
	now      func() time.Time
	newSrv   func(m *pooledModel, e Engine) *Server
	ctx      context.Context // ends when the Router closes; loads run under it
	cancel   context.CancelFunc
	loadsRun sync.WaitGroup // loads and unloads in flight

	mu      sync.Mutex
	models  map[string]*pooledModel
	order   []*pooledModel // as configured
	changed chan struct{}  // closed and replaced whenever a load or an unload ends
	seq     uint64         // loads started
	closed  bool
}

func newModelPool(specs []ModelSpec, cfg RouterConfig, newSrv func(m *pooledModel, e Engine) *Server) *modelPool {
	p := &modelPool{cfg: cfg, log: cfg.Server.Logger, now: cfg.Server.Now, newSrv: newSrv,
		models: make(map[string]*pooledModel), changed: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, s := range specs {
		m := &pooledModel{spec: s, metrics: newMetrics(), unloads: make(map[string]int64)}
		p.models[s.Name] = m
		p.order = append(p.order, m)
	}
	return p
}

// errRouterClosed is the error of requests that wait for a model while the
// Router shuts down.
var errRouterClosed = errors.New("server is shutting down")

// loadError is a failed load, as requests see it.
type loadError struct {
	model string
	err   error
}

func (e *loadError) Error() string {
	return "model " + e.model + " could not be loaded: " + e.err.Error()
}
func (e *loadError) Unwrap() error { return e.err }

// apiErrorOf turns an acquire error into the answer a client gets.
func apiErrorOf(err error) *apiError {
	var le *loadError
	switch {
	case errors.Is(err, errRouterClosed):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down", Message: err.Error()}
	case errors.As(err, &le):
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "model_load_failed", Message: err.Error()}
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "model_unavailable", Message: err.Error()}
}

// acquire returns the Server of the named model, loading it first if need
// be, and counts the caller as its user until release is called. It waits
// for a load (its own or one already running) or an unload in progress, up
// to ctx's end.
func (p *modelPool) acquire(ctx context.Context, m *pooledModel, reason string) (*Server, func(), error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, nil, errRouterClosed
		}
		switch m.state {
		case stateLoaded:
			m.active++
			m.lastUsed = p.now()
			srv := m.srv
			p.mu.Unlock()
			return srv, p.releaser(m, srv), nil
		case stateUnloading:
			ch := m.unloaded
			p.mu.Unlock()
			select {
			case <-ch:
				continue // then load it again
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		case stateUnloaded:
			p.startLoadLocked(m, reason)
		}
		// Loading: wait for the shared load.
		call := m.call
		call.waiters++
		p.mu.Unlock()
		select {
		case <-call.done:
			if call.err != nil {
				return nil, nil, call.err
			}
			return call.srv, p.releaser(m, call.srv), nil // counted by load
		case <-ctx.Done():
			p.mu.Lock()
			select {
			case <-call.done:
				// Finished as we gave up: we were counted; let go.
				p.mu.Unlock()
				if call.err == nil {
					p.releaser(m, call.srv)()
				}
			default:
				call.waiters--
				p.mu.Unlock()
			}
			return nil, nil, ctx.Err()
		}
	}
}

// releaser returns the function that ends one use of m, served by srv.
func (p *modelPool) releaser(m *pooledModel, srv *Server) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			// Measured before taking the pool's lock: the engine's prompt
			// cache takes its own. srv stays m's while this use holds it.
			kv := srv.kvBytes()
			p.mu.Lock()
			m.active--
			m.lastUsed = p.now()
			m.kvBytes = kv
			if m.active == 0 && m.drained != nil {
				close(m.drained)
				m.drained = nil
			}
			p.fitLocked(nil, "memory")
			p.mu.Unlock()
		})
	}
}

// startLoadLocked begins loading m in the background.
func (p *modelPool) startLoadLocked(m *pooledModel, reason string) {
	m.state, m.admitted = stateLoading, false
	p.seq++
	m.loadSeq = p.seq
	m.call = &loadCall{done: make(chan struct{})}
	p.loadsRun.Add(1)
	go p.load(m, m.call, reason)
}

// load makes room for m, loads it and hands it to the requests waiting.
func (p *modelPool) load(m *pooledModel, call *loadCall, reason string) {
	defer p.loadsRun.Done()
	start := time.Now()
	log := p.log.With("model", m.spec.Name)
	log.Info("model loading", "kind", m.spec.Kind, "file_bytes", m.spec.Bytes, "reason", reason)
	err := p.makeRoom(m)
	var eng Engine
	var closeFn func()
	if err == nil {
		eng, closeFn, err = p.callLoad(m)
	}
	var srv *Server
	if err == nil {
		srv = p.newSrv(m, eng)
	}
	took := time.Since(start)

	p.mu.Lock()
	if err == nil && p.closed {
		err = errRouterClosed
	}
	m.call = nil
	if err != nil {
		if !errors.Is(err, errRouterClosed) {
			err = &loadError{model: m.spec.Name, err: err}
			m.failures++
		}
		m.state, m.lastErr = stateUnloaded, err
		call.err = err
		p.broadcastLocked() // its reservation is free again
		p.mu.Unlock()
		close(call.done)
		if closeFn != nil {
			closeFn()
		}
		log.Error("model load failed", "err", err, "took", took.Round(time.Millisecond))
		return
	}
	m.state, m.srv, m.closeFn, m.lastErr = stateLoaded, srv, closeFn, nil
	p.broadcastLocked() // later loads may now unload it, or stop waiting for it
	m.active += call.waiters
	m.lastUsed = p.now()
	m.loads++
	m.loadTime += took
	call.srv = srv
	total := p.heldTotalLocked()
	p.mu.Unlock()
	close(call.done)
	log.Info("model loaded", "kind", m.spec.Kind, "took", took.Round(time.Millisecond), "waiting_requests", call.waiters,
		"memory_bytes", total)
}

// callLoad runs the spec's loader, turning a panic into an error so that a
// broken model cannot take the others down.
func (p *modelPool) callLoad(m *pooledModel) (e Engine, closeFn func(), err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loader panicked: %v", r)
		}
	}()
	e, closeFn, err = m.spec.Load(p.ctx)
	if err == nil && e == nil {
		err = errors.New("loader returned no engine")
	}
	if err != nil && closeFn != nil {
		closeFn()
		closeFn = nil
	}
	return e, closeFn, err
}

// makeRoom waits until m (already counted at its estimate, being in state
// loading) fits under the memory bound, unloading others as needed.
func (p *modelPool) makeRoom(m *pooledModel) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.MaxBytes <= 0 {
		m.admitted = true
		return nil
	}
	for {
		if p.closed {
			return errRouterClosed
		}
		if p.usedLocked(m) <= p.cfg.MaxBytes {
			m.admitted = true
			return nil
		}
		if !p.fitLocked(m, "memory") && !p.earlierLoadLocked(m) {
			var pinned int64
			for _, o := range p.order {
				if o != m && o.spec.Pinned {
					pinned += o.bytesLocked()
				}
			}
			return fmt.Errorf("its file takes %s and the memory bound is %s, of which pinned models hold %s",
				fmtBytes(m.spec.Bytes), fmtBytes(p.cfg.MaxBytes), fmtBytes(pinned))
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.ctx.Done():
		}
		p.mu.Lock()
	}
}

// fitLocked starts unloading models until what stays fits under the memory
// bound: least recently used first, never a pinned or loading model nor
// keep. With keep nil (after a request, or on the sweep) only idle models
// go; for a load (keep is the model loading), busy ones go too, after their
// running requests. It reports false when even that is not enough.
func (p *modelPool) fitLocked(keep *pooledModel, reason string) bool {
	if p.cfg.MaxBytes <= 0 || p.closed {
		return true // closing unloads everything anyway
	}
	over := p.usedLocked(keep) - p.cfg.MaxBytes
	for _, o := range p.order {
		if o.state == stateUnloading {
			over -= o.bytesLocked() // already going
		}
	}
	if over <= 0 {
		return true
	}
	var cands []*pooledModel
	for _, o := range p.order {
		if o != keep && o.state == stateLoaded && !o.spec.Pinned && (keep != nil || o.active == 0) {
			cands = append(cands, o)
		}
	}
	slices.SortStableFunc(cands, func(a, b *pooledModel) int {
		return cmp.Or(cmp.Compare(min(a.active, 1), min(b.active, 1)), a.lastUsed.Compare(b.lastUsed))
	})
	var freeable int64
	for _, o := range cands {
		freeable += o.bytesLocked()
	}
	if freeable < over {
		if keep == nil {
			// Nothing idle enough now; later releases try again.
			for _, o := range cands {
				p.startUnloadLocked(o, reason)
			}
		}
		return false
	}
	for _, o := range cands {
		if over <= 0 {
			break
		}
		over -= o.bytesLocked()
		p.startUnloadLocked(o, reason)
	}
	return true
}

// usedLocked is the memory counted against the bound: every model that is
// loaded or still unloading, and those loading (their files' sizes); for
// the load of model x, only the loads that started before x's and x's own.
func (p *modelPool) usedLocked(x *pooledModel) int64 {
	var n int64
	for _, m := range p.order {
		if x != nil && m.state == stateLoading && m.loadSeq > x.loadSeq {
			continue
		}
		n += m.bytesLocked()
	}
	return n
}

// heldTotalLocked is the memory the models hold (see heldLocked).
func (p *modelPool) heldTotalLocked() int64 {
	var n int64
	for _, m := range p.order {
		n += m.heldLocked()
	}
	return n
}

// earlierLoadLocked reports whether a load that started before x's is still
// running: once it ends, x may find room (it can unload that model, or the
// load failed and its reservation is free).
func (p *modelPool) earlierLoadLocked(x *pooledModel) bool {
	for _, m := range p.order {
		if m.state == stateLoading && m.loadSeq < x.loadSeq {
			return true
		}
	}
	return false
}

// startUnloadLocked takes a loaded model out of service: new requests wait,
// running ones finish, then it is closed.
func (p *modelPool) startUnloadLocked(m *pooledModel, reason string) {
	if m.state != stateLoaded {
		return
	}
	m.state = stateUnloading
	m.unloaded = make(chan struct{})
	var drained chan struct{}
	if m.active > 0 {
		drained = make(chan struct{})
		m.drained = drained
	}
	m.unloads[reason]++
	p.loadsRun.Add(1)
	go p.unload(m, drained, m.active, reason)
}

func (p *modelPool) unload(m *pooledModel, drained chan struct{}, running int, reason string) {
	defer p.loadsRun.Done()
	log := p.log.With("model", m.spec.Name)
	log.Info("model unloading", "reason", reason, "running_requests", running)
	start := time.Now()
	if drained != nil {
		<-drained
	}
	p.mu.Lock()
	closeFn := m.closeFn
	p.mu.Unlock()
	if closeFn != nil {
		closeFn()
	}
	p.mu.Lock()
	m.state, m.srv, m.closeFn, m.kvBytes = stateUnloaded, nil, nil, 0
	close(m.unloaded)
	p.broadcastLocked()
	total := p.heldTotalLocked()
	p.mu.Unlock()
	// The weights' mapping is gone with closeFn; the KV caches and the
	// rest are Go memory: give it back to the system now rather than when
	// the scavenger gets to it, so that the process's RSS follows the bound.
	debug.FreeOSMemory()
	log.Info("model unloaded", "reason", reason, "took", time.Since(start).Round(time.Millisecond), "memory_bytes", total)
}

func (p *modelPool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// sweep unloads models idle for longer than RouterConfig.IdleTTL, refreshes
// the KV measures, applies the memory bound, and lets each loaded server
// evict its idle conversations.
func (p *modelPool) sweep() {
	// Measure outside the pool's lock (the servers take their own); a
	// model that changed state meanwhile keeps its old measure.
	p.mu.Lock()
	srvs := make(map[*pooledModel]*Server)
	for _, m := range p.order {
		if m.state == stateLoaded {
			srvs[m] = m.srv
		}
	}
	p.mu.Unlock()
	kv := make(map[*pooledModel]int64)
	for m, srv := range srvs {
		srv.sessions.mu.Lock()
		srv.sessions.evictLocked(0)
		srv.sessions.mu.Unlock()
		kv[m] = srv.kvBytes()
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := p.now()
	for _, m := range p.order {
		if m.state != stateLoaded {
			continue
		}
		if srv, ok := srvs[m]; ok && srv == m.srv {
			m.kvBytes = kv[m]
		}
		if p.cfg.IdleTTL > 0 && !m.spec.Pinned && m.active == 0 && now.Sub(m.lastUsed) >= p.cfg.IdleTTL {
			p.startUnloadLocked(m, "idle")
		}
	}
	p.fitLocked(nil, "memory")
}

// unloadByRequest unloads a model on request (POST /models/unload).
func (p *modelPool) unloadByRequest(m *pooledModel) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errRouterClosed
	case m.spec.Pinned:
		return fmt.Errorf("model %s is pinned: it stays loaded", m.spec.Name)
	case m.state != stateLoaded:
		return fmt.Errorf("model %s is not loaded (it is %s)", m.spec.Name, m.state)
	}
	p.startUnloadLocked(m, "request")
	return nil
}

// close stops the pool: waiting requests fail, loads in flight are told
// to stop, and every model is closed once its requests have ended.
func (p *modelPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cancel()
	p.broadcastLocked()
	for _, m := range p.order {
		p.startUnloadLocked(m, "shutdown")
	}
	p.mu.Unlock()
	p.loadsRun.Wait()
}

// fmtBytes writes a byte count for people: "1.9 GiB", "812 MiB", "4096 B".
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB"}
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, suffix[i])
}
