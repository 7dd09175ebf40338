package server

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/smolgo/smolgo/engine"
)

// GET /metrics serves the server's counters in Prometheus' text exposition
// format (version 0.0.4). It is written by hand: a dozen counters and one
// histogram do not need prometheus/client_golang and its dependency tree.
//
// Counters only grow, so rates come from the scraper:
// rate(smolgo_generated_tokens_total[1m]) / rate(smolgo_decode_seconds_total[1m])
// is the decode speed in tokens per second.

// ttftBuckets are the upper bounds of the time-to-first-token histogram, in
// seconds.
var ttftBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// metrics counts what the server did. Gauges (queue, slots, sessions, the
// engine's batch and prompt cache) are read when scraped.
type metrics struct {
	mu       sync.Mutex
	requests map[requestKey]int64
	gens     map[genKey]int64 // finished generations by endpoint and stop reason

	promptTokens, cachedTokens, generatedTokens int64
	draftTokens, acceptedTokens                 int64 // speculative decoding's (engine.Stats)
	prefillSeconds, decodeSeconds               float64

	ttftCounts []int64 // per bucket, not cumulative; the last is +Inf
	ttftSum    float64
	ttftN      int64
}

type requestKey struct {
	endpoint string
	status   int
}

type genKey struct{ endpoint, stop string }

func newMetrics() *metrics {
	return &metrics{requests: make(map[requestKey]int64), gens: make(map[genKey]int64),
		ttftCounts: make([]int64, len(ttftBuckets)+1)}
}

// request counts one answered HTTP request. endpoint is the route pattern
// that matched (so the label's values are bounded), or "other".
func (m *metrics) request(endpoint string, status int) {
	if endpoint == "" || endpoint == "/" {
		endpoint = "other"
	}
	m.mu.Lock()
	m.requests[requestKey{endpoint, status}]++
	m.mu.Unlock()
}

// generation counts a finished generation's tokens and timings.
func (m *metrics) generation(endpoint string, g *reply) {
	st := g.stats
	m.mu.Lock()
	defer m.mu.Unlock()
	stop := st.StopReason
	if stop == "" {
		stop = "error"
	}
	m.gens[genKey{endpoint, stop}]++
	m.promptTokens += int64(st.PromptTokens)
	m.cachedTokens += int64(st.CachedTokens)
	m.generatedTokens += int64(st.GeneratedTokens)
	m.draftTokens += int64(st.DraftTokens)
	m.acceptedTokens += int64(st.AcceptedTokens)
	if st.PrefillTokensPerSec > 0 {
		m.prefillSeconds += float64(st.PromptTokens-st.CachedTokens) / st.PrefillTokensPerSec
	}
	if st.DecodeTokensPerSec > 0 {
		m.decodeSeconds += float64(st.GeneratedTokens) / st.DecodeTokensPerSec
	}
	if g.firstToken > 0 {
		sec := g.firstToken.Seconds()
		i, _ := slices.BinarySearch(ttftBuckets, sec)
		m.ttftCounts[i]++
		m.ttftSum += sec
		m.ttftN++
	}
}

// PromptCaching is implemented by engines with a prompt cache shared by
// their sessions (FromModel's, when the model has one); /metrics reports
// its hits and size.
type PromptCaching interface {
	// PromptCacheStats reports the cache's counters; ok is false when the
	// engine has no prompt cache.
	PromptCacheStats() (st engine.PromptCacheStats, ok bool)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	s.metrics.write(&b)
	p := promWriter{w: &b}
	busy, queued := s.sched.load(s.cfg.Slots)
	p.metric("smolgo_slots", "gauge", "Generation slots.", "", float64(s.cfg.Slots))
	p.metric("smolgo_slots_busy", "gauge", "Generation slots in use.", "", float64(busy))
	p.metric("smolgo_queue_length", "gauge", "Requests waiting for a slot.", "", float64(queued))
	s.gatewayMetrics(p, busy, queued)
	n, bytes := s.sessions.stats()
	p.metric("smolgo_sessions", "gauge", "Web-chat sessions kept on the server.", "", float64(n))
	p.metric("smolgo_session_memory_bytes", "gauge", "Memory held by the kept sessions' KV caches.", "", float64(bytes))
	if o, ok := s.engine.(Occupancy); ok {
		l := o.Occupancy()
		p.metric("smolgo_batch_sequences", "gauge", "Generations holding a place in the engine's batch.", "", float64(l.Sequences))
		p.metric("smolgo_batch_sequences_waiting", "gauge", "Generations waiting for a place in the batch.", "", float64(l.Waiting))
		p.metric("smolgo_batch_sequences_max", "gauge", "Places in the engine's batch.", "", float64(l.MaxSequences))
		p.metric("smolgo_batch_steps_total", "counter", "Forward steps computed.", "", float64(l.Steps))
		p.metric("smolgo_batch_step_tokens_total", "counter", "Tokens computed by forward steps.", "", float64(l.StepTokens))
		p.metric("smolgo_batch_step_sequences_total", "counter", "Sequences computed, summed over steps (divide by steps for the mean batch).", "", float64(l.StepSequences))
	}
	if pc, ok := s.engine.(PromptCaching); ok {
		if st, ok := pc.PromptCacheStats(); ok {
			p.metric("smolgo_prompt_cache_hits_total", "counter", "Prompts that reused a prompt-cache snapshot.", "", float64(st.Hits))
			p.metric("smolgo_prompt_cache_misses_total", "counter", "Prompts that found no usable snapshot.", "", float64(st.Misses))
			p.metric("smolgo_prompt_cache_hit_tokens_total", "counter", "Prompt tokens reused from the prompt cache.", "", float64(st.HitTokens))
			p.metric("smolgo_prompt_cache_entries", "gauge", "Snapshots in the prompt cache.", "", float64(st.Entries))
			p.metric("smolgo_prompt_cache_bytes", "gauge", "Memory held by the prompt cache.", "", float64(st.Bytes))
			p.metric("smolgo_prompt_cache_max_bytes", "gauge", "The prompt cache's memory bound.", "", float64(st.MaxBytes))
			if st.DiskMaxBytes > 0 {
				p.metric("smolgo_prompt_cache_disk_hits_total", "counter", "Snapshots read from the prompt cache's directory.", "", float64(st.DiskHits))
				p.metric("smolgo_prompt_cache_disk_hit_tokens_total", "counter", "Prompt tokens reused from snapshots read from disk.", "", float64(st.DiskHitTokens))
				p.metric("smolgo_prompt_cache_disk_writes_total", "counter", "Snapshots written to the prompt cache's directory.", "", float64(st.DiskWrites))
				p.metric("smolgo_prompt_cache_disk_ignored_total", "counter", "Prompt-cache files refused: another model or layout, damaged, or gone.", "", float64(st.DiskIgnored))
				p.metric("smolgo_prompt_cache_disk_entries", "gauge", "Snapshot files in the prompt cache's directory.", "", float64(st.DiskEntries))
				p.metric("smolgo_prompt_cache_disk_bytes", "gauge", "Bytes of the prompt cache's files.", "", float64(st.DiskBytes))
				p.metric("smolgo_prompt_cache_disk_max_bytes", "gauge", "The bound on the prompt cache's files.", "", float64(st.DiskMaxBytes))
			}
		}
	}
	io.WriteString(w, b.String())
}

// write writes the counters.
func (m *metrics) write(b *strings.Builder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := promWriter{w: b}
	p.header("smolgo_http_requests_total", "counter", "HTTP requests answered, by route and status.")
	keys := slices.SortedFunc(maps.Keys(m.requests), func(a, b requestKey) int {
		return cmp.Or(strings.Compare(a.endpoint, b.endpoint), cmp.Compare(a.status, b.status))
	})
	for _, k := range keys {
		p.sample("smolgo_http_requests_total", labels("endpoint", k.endpoint, "status", strconv.Itoa(k.status)), float64(m.requests[k]))
	}
	p.header("smolgo_generations_total", "counter", "Finished generations, by API and stop reason.")
	gkeys := slices.SortedFunc(maps.Keys(m.gens), func(a, b genKey) int {
		return cmp.Or(strings.Compare(a.endpoint, b.endpoint), strings.Compare(a.stop, b.stop))
	})
	for _, k := range gkeys {
		p.sample("smolgo_generations_total", labels("endpoint", k.endpoint, "stop_reason", k.stop), float64(m.gens[k]))
	}
	p.metric("smolgo_prompt_tokens_total", "counter", "Prompt tokens of finished generations.", "", float64(m.promptTokens))
	p.metric("smolgo_cached_prompt_tokens_total", "counter", "Prompt tokens found in a KV or prompt cache (not computed).", "", float64(m.cachedTokens))
	p.metric("smolgo_generated_tokens_total", "counter", "Tokens generated.", "", float64(m.generatedTokens))
	p.metric("smolgo_draft_tokens_total", "counter", "Tokens drafted by speculative decoding (lookup, a draft model or the model's MTP block) and checked by the model.", "", float64(m.draftTokens))
	p.metric("smolgo_draft_accepted_tokens_total", "counter", "Drafted tokens the model accepted.", "", float64(m.acceptedTokens))
	p.metric("smolgo_prefill_seconds_total", "counter", "Time spent computing prompts.", "", m.prefillSeconds)
	p.metric("smolgo_decode_seconds_total", "counter", "Time spent generating tokens.", "", m.decodeSeconds)
	name := "smolgo_time_to_first_token_seconds"
	p.header(name, "histogram", "Time from a request's arrival to its first generated token.")
	var cum int64
	for i, le := range ttftBuckets {
		cum += m.ttftCounts[i]
		p.sample(name+"_bucket", labels("le", strconv.FormatFloat(le, 'g', -1, 64)), float64(cum))
	}
	cum += m.ttftCounts[len(ttftBuckets)]
	p.sample(name+"_bucket", labels("le", "+Inf"), float64(cum))
	p.sample(name+"_sum", "", m.ttftSum)
	p.sample(name+"_count", "", float64(m.ttftN))
}

// promWriter writes the text exposition format.
type promWriter struct{ w *strings.Builder }

func (p promWriter) header(name, typ, help string) {
	fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p promWriter) sample(name, labels string, v float64) {
	fmt.Fprintf(p.w, "%s%s %s\n", name, labels, strconv.FormatFloat(v, 'g', -1, 64))
}

// metric writes a metric with one sample.
func (p promWriter) metric(name, typ, help, labels string, v float64) {
	p.header(name, typ, help)
	p.sample(name, labels, v)
}

// labels formats label pairs, escaping values as the format requires.
func labels(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// GatewayBlockSize is the block size /metrics reports in
// smolgo_cache_config_info, in tokens: the granularity at which a gateway's
// prefix-aware scorer (GIE's prefix plugin) hashes prompts. The prompt cache
// itself reuses any prefix, to the token; 64 is the engine's prefill chunk
// (engine.DefaultPrefillChunk), so a prefix the gateway counts in blocks is
// also whole steps of prefill saved.
const GatewayBlockSize = 64

// gatewayMetrics writes the gauges a Kubernetes inference gateway (the
// Gateway API Inference Extension's endpoint picker, llm-d) routes by,
// with the semantics of vLLM's (num_requests_waiting, num_requests_running,
// kv_cache_usage_perc, cache_config_info):
//
//	smolgo_requests_waiting     requests admitted but not computing: waiting
//	                            for a slot, or holding one while waiting for
//	                            a place in the engine's batch
//	smolgo_requests_running     requests computing (prefill or decode)
//	smolgo_kv_cache_usage_ratio positions in the running sequences' KV
//	                            caches over what the batch's caches hold at
//	                            full context (engine.Occupancy), 0 to 1
//	smolgo_cache_config_info    1, with labels block_size (GatewayBlockSize)
//	                            and num_gpu_blocks (the capacity in such
//	                            blocks: the prefix plugin's per-server LRU)
//
// docs/serving.md gives the endpoint picker's flags and engineConfigs that
// map onto them.
func (s *Server) gatewayMetrics(p promWriter, busy, queued int) {
	waiting, running := queued, busy
	var usage float64
	blocks := 0
	if o, ok := s.engine.(Occupancy); ok {
		l := o.Occupancy()
		// Requests holding a slot but not yet a place in the batch wait.
		waiting += l.Waiting
		running = max(0, busy-l.Waiting)
		if l.PositionCapacity > 0 {
			usage = min(1, float64(l.CachedPositions)/float64(l.PositionCapacity))
			blocks = l.PositionCapacity / GatewayBlockSize
		}
	}
	p.metric("smolgo_requests_waiting", "gauge", "Requests waiting to be computed: for a slot or a place in the batch (GIE's queued requests).", "", float64(waiting))
	p.metric("smolgo_requests_running", "gauge", "Requests being computed (GIE's running requests).", "", float64(running))
	p.metric("smolgo_kv_cache_usage_ratio", "gauge", "KV cache in use by running requests, 0 to 1 (GIE's KV-cache utilization).", "", usage)
	p.metric("smolgo_cache_config_info", "gauge", "The KV cache's configuration, in labels (GIE's cache info).",
		labels("block_size", strconv.Itoa(GatewayBlockSize), "num_gpu_blocks", strconv.Itoa(blocks)), 1)
}
