package server

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// GET /metrics on a Router: every model's series as its Server writes them,
// with a model="NAME" label added to each sample (one HELP and TYPE per
// family, the models' samples under it), and the pool's own series:
//
//	smolgo_model_loaded{model}                 1 while loaded, else 0
//	smolgo_model_memory_bytes{model}           what it counts against the bound (file and KV caches)
//	smolgo_model_running_requests{model}       requests using it now
//	smolgo_model_loads_total{model}            loads that succeeded
//	smolgo_model_load_failures_total{model}    loads that failed
//	smolgo_model_load_seconds_total{model}     time spent in successful loads
//	smolgo_model_unloads_total{model, reason}  unloads: idle, memory, request, shutdown
//	smolgo_models_memory_bytes                 the total counted against the bound
//	smolgo_models_max_memory_bytes             the bound (0: none)
//
// A model's counters are kept across its loads, so they do not restart
// when it is loaded again; while it is unloaded it has counters but no
// gauges.

func (rt *Router) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	type part struct{ model, text string }
	var parts []part
	for _, m := range rt.pool.order {
		rt.pool.mu.Lock()
		srv := m.srv
		if m.state != stateLoaded {
			srv = nil
		}
		rt.pool.mu.Unlock()
		var b strings.Builder
		if srv != nil {
			bw := &bufferWriter{header: http.Header{}}
			srv.handleMetrics(bw, r)
			b.Write(bw.buf.Bytes())
		} else {
			m.metrics.write(&b)
		}
		parts = append(parts, part{m.spec.Name, b.String()})
	}
	var fams families
	for _, p := range parts {
		fams.add(p.text, p.model)
	}
	var b strings.Builder
	fams.write(&b)

	rt.pool.mu.Lock()
	pw := promWriter{w: &b}
	type gauge struct {
		name, typ, help string
		value           func(m *pooledModel) float64
	}
	for _, g := range []gauge{
		{"smolgo_model_loaded", "gauge", "1 while the model is loaded, else 0.", func(m *pooledModel) float64 { return b2f(m.state == stateLoaded) }},
		{"smolgo_model_memory_bytes", "gauge", "Memory the model counts against the bound: its file and KV caches.", func(m *pooledModel) float64 { return float64(m.heldLocked()) }},
		{"smolgo_model_running_requests", "gauge", "Requests using the model now.", func(m *pooledModel) float64 { return float64(m.active) }},
		{"smolgo_model_loads_total", "counter", "Loads of the model that succeeded.", func(m *pooledModel) float64 { return float64(m.loads) }},
		{"smolgo_model_load_failures_total", "counter", "Loads of the model that failed.", func(m *pooledModel) float64 { return float64(m.failures) }},
		{"smolgo_model_load_seconds_total", "counter", "Time spent in the model's successful loads.", func(m *pooledModel) float64 { return m.loadTime.Seconds() }},
	} {
		pw.header(g.name, g.typ, g.help)
		for _, m := range rt.pool.order {
			pw.sample(g.name, labels("model", m.spec.Name), g.value(m))
		}
	}
	pw.header("smolgo_model_unloads_total", "counter", "Unloads of the model, by reason: idle, memory, request, shutdown.")
	for _, m := range rt.pool.order {
		for _, reason := range slices.Sorted(maps.Keys(m.unloads)) {
			pw.sample("smolgo_model_unloads_total", labels("model", m.spec.Name, "reason", reason), float64(m.unloads[reason]))
		}
	}
	pw.metric("smolgo_models_memory_bytes", "gauge", "Memory counted against the bound: the loaded models' files and KV caches.", "", float64(rt.pool.heldTotalLocked()))
	pw.metric("smolgo_models_max_memory_bytes", "gauge", "The bound on the loaded models' memory (0: none).", "", float64(rt.cfg.MaxBytes))
	rt.pool.mu.Unlock()
	io.WriteString(w, b.String())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// families merges expositions of the text format: the samples of a family
// from every source, under one HELP and TYPE, in the order the families
// first appear.
type families struct {
	order  []string
	byName map[string]*family
}

type family struct {
	header  []string // its HELP and TYPE lines
	samples []string
}

// add reads one exposition, labelling its samples model="model". A sample
// belongs to the family whose HELP or TYPE line came last before it (a
// histogram's _bucket, _sum and _count samples are under its name).
func (fs *families) add(text, model string) {
	if fs.byName == nil {
		fs.byName = make(map[string]*family)
	}
	label := labels("model", model)
	label = label[1 : len(label)-1] // model="…"
	var cur *family
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "# ") {
			f := strings.Fields(line)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue
			}
			name := f[2]
			fam, ok := fs.byName[name]
			if !ok {
				fam = &family{}
				fs.byName[name] = fam
				fs.order = append(fs.order, name)
			}
			if len(fam.header) < 2 && !slices.Contains(fam.header, line) {
				fam.header = append(fam.header, line)
			}
			cur = fam
			continue
		}
		if cur == nil {
			continue // a sample before any header: not written by this package
		}
		cur.samples = append(cur.samples, withLabel(line, label))
	}
}

// withLabel adds a label pair to a sample line: name{a="b"} 1 becomes
// name{model="m",a="b"} 1, and name 1 becomes name{model="m"} 1.
func withLabel(line, pair string) string {
	i := strings.IndexAny(line, "{ ")
	switch {
	case i < 0:
		return line
	case line[i] == '{':
		if strings.HasPrefix(line[i+1:], "}") {
			return line[:i+1] + pair + line[i+1:]
		}
		return line[:i+1] + pair + "," + line[i+1:]
	}
	return line[:i] + "{" + pair + "}" + line[i:]
}

func (fs *families) write(b *strings.Builder) {
	for _, name := range fs.order {
		f := fs.byName[name]
		for _, h := range f.header {
			b.WriteString(h)
			b.WriteByte('\n')
		}
		for _, s := range f.samples {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
}

// bufferWriter is an http.ResponseWriter that keeps what is written.
type bufferWriter struct {
	header http.Header
	buf    bytes.Buffer
	status int
}

func (w *bufferWriter) Header() http.Header         { return w.header }
func (w *bufferWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *bufferWriter) WriteHeader(status int)      { w.status = status }
