package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smolgo/smolgo/sample"
)

// generation is the state of one Generate call. run walks its steps in
// order: prompt (render and tokenize, dropping old messages if allowed),
// admit (a place in the batch), reuse (what the caches already hold),
// prefill (the rest of the prompt, in chunks) and decode (sample, check a
// draft, emit), then done.
type generation struct {
	s       *Session
	m       *Model
	opts    GenerateOptions
	yield   func(Event, error) bool
	stopped bool // the consumer broke out of the loop

	stats     Stats
	dropped   int       // messages prompt dropped to fit the context
	marks     []int     // prompt positions where a recurrent cache keeps its state (turnMarks)
	prefilled time.Time // end of the prefill, start of decoding

	// Decoding.
	sampler *sample.Sampler
	cons    *constrained
	dec     Decoder
	parser  Parser
	stop    *stopMatcher
	spec    *drafter      // lookup speculation; nil: none
	md      *modelDrafter // drafts by the draft model or the MTP block; nil: none
	// mtpOn: this generation drafts with the MTP block, which reads the
	// model's hidden states: of the last decode step's rows in hid (from
	// position hidFrom; nil once fed to the block).
	mtpOn    bool
	hid      []float32
	hidFrom  int
	hidBuf   []float32
	mtpIn    []float32 // reused by feedMTP
	probs    []float32 // the model's distribution at a row (verify)
	lastTok  int32     // the last token that produced text
	hitStop  bool      // a stop string ended the answer
	endCalls bool      // a tool call ended the answer (EndAfterToolCall)
	calls    int       // tool calls so far (their ids)
	logprobs []TokenLogprob
	lp       logprober
	input    []int32   // the tokens of the last step (a token and its draft)
	logits   []float32 // that step's logits, rows of Vocab
	biased   []float32 // a row of logits with GenerateOptions.LogitBias added
	// acceptedIn counts the draft tokens the last step confirmed.
	acceptedIn int

	// Images (image.go): the prompt's image spans; for an M-RoPE model
	// with images, every prompt row's position and the position after the
	// prompt (pos nil: rows sit at their places).
	spans   []imageSpan
	pos     []Position
	nextPos int
	decPos  []Position // the positions of a decode step's rows (reused)
}

func (g *generation) run(ctx context.Context, msgs []Message) error {
	s := g.s
	if err := g.opts.validate(); err != nil {
		return err
	}
	for id := range g.opts.LogitBias {
		if int(id) >= g.m.b.Vocab() {
			return fmt.Errorf("engine: GenerateOptions.LogitBias: token %d is outside the model's vocabulary [0, %d)", id, g.m.b.Vocab())
		}
	}
	if g.opts.Drafter == DrafterModel && g.m.cfg.Draft == nil {
		return fmt.Errorf("engine: GenerateOptions.Drafter %q: the model has no draft model (WithDraft)", DrafterModel)
	}
	if g.opts.Drafter == DrafterMTP && g.m.mtp == nil {
		return fmt.Errorf("engine: GenerateOptions.Drafter %q: the model drafts with no MTP block (WithMTP)", DrafterMTP)
	}
	if err := s.ensureCache(); err != nil {
		return err
	}
	if g.opts.Constraint != nil {
		no := false
		g.opts.Thinking = &no
	}
	prompt, err := g.prompt(msgs)
	if err != nil {
		return err
	}
	queued := time.Now()
	release, err := g.m.sched.admit(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return g.done(StopCancelled)
		}
		return err
	}
	defer release()
	g.stats.QueueSeconds = time.Since(queued).Seconds()
	g.mtpOn = g.drafter() == DrafterMTP && !slices.ContainsFunc(prompt, func(t int32) bool { return t < 0 })

	logits, err := g.reuse(ctx, prompt)
	if err != nil {
		return err
	}
	if logits == nil {
		if logits, err = g.prefill(ctx, prompt); err != nil || logits == nil {
			return err
		}
	}
	if g.opts.PromptReady != nil {
		g.opts.PromptReady(len(prompt), g.stats.CachedTokens)
	}
	g.startDecoding(ctx, prompt)
	if g.cons != nil && g.opts.RequireComplete && !g.completable() {
		return g.done(StopLength) // the answer could not be whole: not started
	}
	return g.decode(ctx, logits)
}

// prompt renders and tokenizes msgs, dropping old messages if allowed.
func (g *generation) prompt(msgs []Message) ([]int32, error) {
	ctxLen := g.s.cache.MaxLen()
	if raw := g.opts.RawPrompt; raw != nil {
		if len(msgs) > 0 {
			return nil, errors.New("engine: Generate with a RawPrompt takes no messages")
		}
		return g.checkPrompt(slices.Clone(raw), ctxLen, 0)
	}
	if len(msgs) == 0 {
		return nil, errors.New("engine: Generate needs at least one message")
	}
	head := 0 // a leading system message is never dropped
	if msgs[0].Role == "system" {
		head = 1
	}
	// The images of each message, prepared once for every attempt.
	var perMsg [][]*promptImage
	if hasImages(msgs) || g.m.proj != nil {
		perMsg = make([][]*promptImage, len(msgs))
		for i := range msgs {
			imgs, err := g.m.promptImages(msgs[i : i+1])
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			perMsg[i] = imgs
		}
	}
	popts := PromptOptions{Thinking: g.opts.Thinking, ReasoningEffort: g.opts.ReasoningEffort, Tools: g.opts.Tools, ParseSpecial: g.opts.ParseSpecial, TemplateKwargs: g.opts.TemplateKwargs}
	for dropped := 0; ; dropped++ {
		use := msgs
		var imgs []*promptImage
		for i := range msgs {
			if perMsg != nil && (dropped == 0 || i < head || i >= head+dropped) {
				imgs = append(imgs, perMsg[i]...)
			}
		}
		if dropped > 0 {
			use = append(slices.Clip(msgs[:head]), msgs[head+dropped:]...)
		}
		ids, err := g.m.f.Prompt(use, popts)
		g.spans = nil
		if err == nil && len(imgs) > 0 {
			ids, g.spans, err = g.m.expand(ids, imgs)
		}
		if err != nil && dropped > 0 && use[head].Role != "user" && head+dropped < len(msgs)-1 {
			// A template that needs turns to alternate (Gemma's) cannot
			// start with the answer left of a dropped question: drop it
			// too.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: building the prompt: %w", err)
		}
		last := !g.opts.DropOldest || len(use)-head <= 1
		if len(ids) < ctxLen || last {
			g.dropped = dropped
			g.stats.DroppedMessages = dropped
			g.marks = g.turnMarks(use, popts, ids)
			ids, err = g.checkPrompt(ids, ctxLen, dropped)
			if err == nil && len(g.spans) > 0 {
				e, ok := g.m.b.(Embedder)
				g.pos, g.nextPos = positions(g.spans, len(ids), ok && e.MRoPE())
			}
			return ids, err
		}
	}
}

// turnMarks returns, for a cache that goes back only to where it kept its
// state (Checkpointer), the prompt positions worth a checkpoint besides its
// end: where the system prompt ends, where the last message begins, and
// where the rendering of this conversation with an answer after it departs
// from this prompt, so that sessions sharing a system prompt, and a
// conversation's next turn, resume there. A position is the length of the longest prefix that the
// prompt shares with the rendering of the messages before it.
func (g *generation) turnMarks(msgs []Message, popts PromptOptions, ids []int32) []int {
	if _, ok := g.s.cache.(Checkpointer); !ok && !g.m.draftRecurrent {
		return nil
	}
	var marks []int
	mark := func(other []Message) {
		head, err := g.m.f.Prompt(other, popts)
		if err != nil {
			// A template that cannot render that conversation (Qwen3.5's
			// raises without a user query) may render it with a question
			// after it, which shares the same prefix with this prompt.
			head, err = g.m.f.Prompt(append(slices.Clip(other), Message{Role: "user", Content: "."}), popts)
			if err != nil {
				return
			}
		}
		if n := commonPrefix(head, ids); n > 0 && n < len(ids) && !slices.Contains(marks, n) {
			marks = append(marks, n)
		}
	}
	for _, k := range []int{1, len(msgs) - 1} {
		if k < 1 || k >= len(msgs) || (k == 1 && msgs[0].Role != "system") {
			continue
		}
		mark(msgs[:k])
	}
	// Where the next turn's prompt leaves this one: the conversation with
	// an answer and a new question after it renders the answer's turn as
	// history, which a template may write otherwise than this generation
	// prompt (Qwen3.5's drops the opened <think> there).
	mark(append(slices.Clip(msgs), Message{Role: "assistant", Content: "."}, Message{Role: "user", Content: "."}))
	slices.Sort(marks)
	return marks
}

// checkPrompt checks prompt tokens against the vocabulary and the context.
func (g *generation) checkPrompt(ids []int32, ctxLen, dropped int) ([]int32, error) {
	if len(ids) == 0 {
		return nil, errors.New("engine: the prompt is empty")
	}
	vocab := g.m.b.Vocab()
	for i, id := range ids {
		if id < 0 && inSpan(g.spans, i) {
			continue // an image row's placeholder
		}
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("engine: prompt token %d at index %d is outside the model's vocabulary [0, %d)", id, i, vocab)
		}
	}
	if len(ids) >= ctxLen {
		return nil, &PromptTooLongError{Tokens: len(ids), Context: ctxLen, Dropped: dropped}
	}
	g.stats.PromptTokens = len(ids)
	return ids, nil
}

// reuse keeps what the session's cache (or the prompt cache) already holds
// of prompt and truncates the rest. It returns the prompt's logits when the
// very same prompt was computed before.
func (g *generation) reuse(ctx context.Context, prompt []int32) ([]float32, error) {
	s := g.s
	if g.dropped > 0 && g.opts.ShiftContext && len(g.spans) == 0 && !slices.ContainsFunc(s.tokens, func(t int32) bool { return t < 0 }) {
		if err := g.shift(prompt); err != nil {
			return nil, err
		}
	}
	common := commonPrefix(s.tokens, prompt)
	if pc := g.m.pc; pc != nil {
		n, logits, err := pc.restore(ctx, nil, s.cache, prompt, common)
		if err != nil {
			return nil, fmt.Errorf("engine: reusing a shared prompt prefix: %w", err)
		}
		if n > common {
			s.tokens = append(s.tokens[:common], prompt[common:n]...)
			s.promptEnd = -1
			if logits != nil {
				s.promptLogits = append(s.promptLogits[:0], logits...)
				s.promptEnd = n
			}
			g.stats.SharedCachedTokens = n - common
			common = n
		}
	}
	var logits []float32
	if common == len(prompt) && s.promptEnd == len(prompt) {
		logits = s.promptLogits // the same prompt again: reuse its logits
	} else {
		common = min(common, len(prompt)-1) // at least one token makes logits
	}
	if f := imageFloor(g.spans, common); f != common {
		common, logits = f, nil // a prefix never ends inside an image chunk
	}
	if f := floor(s.cache, common); f != common {
		// Sliding-window layers no longer hold that prefix, or recurrent
		// layers kept their state only at an earlier checkpoint:
		// recompute from there.
		common, logits = f, nil
	}
	s.tokens = s.tokens[:common]
	if s.cache.Len() > common {
		if err := s.cache.Truncate(common); err != nil {
			return nil, fmt.Errorf("engine: rewinding the KV cache to %d tokens: %w", common, err)
		}
	}
	if s.promptEnd > common {
		s.promptEnd = -1
	}
	if s.approxFrom >= common {
		s.approxFrom = -1 // everything shifted is recomputed
	}
	s.sampled = s.sampled[:0]
	g.stats.CachedTokens = common
	return logits, nil
}

// prefill computes the prompt after what the cache holds, a chunk per step
// (the scheduler decides how much), and returns the last token's logits. A
// cancelled ctx ends the generation (nil logits, nil error).
func (g *generation) prefill(ctx context.Context, prompt []int32) ([]float32, error) {
	s := g.s
	V := g.m.b.Vocab()
	g.logits = grow(g.logits, V)
	start, from := time.Now(), len(s.tokens)
	_, recurrent := s.cache.(Checkpointer)
	every := g.m.cfg.CheckpointInterval
	for len(s.tokens) < len(prompt) {
		pos := len(s.tokens)
		end := len(prompt)
		if recurrent {
			end = g.checkpointEnd(pos, end, every)
		}
		var in rowInput
		for _, sp := range g.spans {
			if sp.start == pos {
				// An image chunk: its rows, encoded now, in one step.
				rows := make([]float32, sp.n*g.m.proj.Width())
				if err := sp.img.p.Encode(ctx, sp.chunk, rows); err != nil {
					if ctx.Err() != nil {
						return nil, g.done(StopCancelled)
					}
					return nil, fmt.Errorf("engine: encoding an image: %w", err)
				}
				g.stats.ImageRows += sp.n
				end = pos + sp.n
				in = rowInput{embeds: rows, bidi: sp.c.Bidirectional}
				break
			}
			if sp.start > pos {
				end = min(end, sp.start)
				break
			}
		}
		if g.pos != nil {
			in.pos = g.pos[pos:end]
		}
		var hidden []float32
		if g.mtpOn {
			// The block reads every row's hidden state: at most a
			// step's worth at a time, fed to it after each step.
			E := g.m.mtp.E
			end = min(end, pos+g.m.b.BatchSize())
			g.hidBuf = grow(g.hidBuf, (end-pos)*E)
			hidden = g.hidBuf[:(end-pos)*E]
		}
		n, err := g.m.sched.prefillInputHidden(ctx, s.cache, prompt[pos:end], g.logits[:V], in, hidden, len(hidden)/(end-pos))
		if err != nil {
			if ctx.Err() != nil {
				return nil, g.done(StopCancelled)
			}
			return nil, fmt.Errorf("engine: prefill of prompt tokens %d..%d: %w", pos, len(prompt)-1, err)
		}
		s.tokens = append(s.tokens, prompt[pos:pos+n]...)
		if g.mtpOn {
			if err := g.feedMTP(ctx, pos, n, hidden); err != nil {
				if ctx.Err() != nil {
					return nil, g.done(StopCancelled)
				}
				g.m.cfg.Logger.Warn("engine: the MTP block failed; no drafts by it for this generation", "error", err)
				g.mtpOn = false
			}
		}
		if recurrent && g.checkpointAt(len(s.tokens), len(prompt), every) {
			// The end of the prompt is where the next turn resumes.
			if err := checkpoint(s.cache); err != nil {
				return nil, fmt.Errorf("engine: checkpoint at %d prompt tokens: %w", len(s.tokens), err)
			}
		}
		if g.opts.PrefillProgress != nil {
			g.opts.PrefillProgress(len(s.tokens), len(prompt))
		}
	}
	if d := time.Since(start).Seconds(); d > 0 {
		g.stats.PrefillTokensPerSec = float64(len(prompt)-from) / d
	}
	s.promptLogits = append(s.promptLogits[:0], g.logits[:V]...)
	s.promptEnd = len(prompt)
	if pc := g.m.pc; pc != nil && s.approxFrom < 0 {
		if err := pc.save(nil, s.cache, prompt, s.promptLogits); err != nil {
			return nil, fmt.Errorf("engine: saving the prompt in the prompt cache: %w", err)
		}
		if g.mtpOn {
			g.saveMTP(prompt)
		}
	}
	return s.promptLogits, nil
}

// checkpointEnd is where a step of a prompt from pos (to end) stops for a
// recurrent cache, which goes back only to where it kept its state: every
// CheckpointInterval (every) tokens of a long prompt, and at the turns'
// marks.
func (g *generation) checkpointEnd(pos, end, every int) int {
	if every > 0 {
		end = min(end, (pos/every+1)*every)
	}
	for _, mk := range g.marks {
		if mk > pos {
			return min(end, mk)
		}
	}
	return end
}

// checkpointAt reports whether a recurrent cache keeps its state after n
// tokens of a prompt of end tokens: at its end (where the next turn
// resumes), every every tokens, and at the turns' marks.
func (g *generation) checkpointAt(n, end, every int) bool {
	return n == end || (every > 0 && n%every == 0) || slices.Contains(g.marks, n)
}

// startDecoding sets up the sampler, the parsers and the draft.
func (g *generation) startDecoding(ctx context.Context, prompt []int32) {
	g.prefilled = time.Now()
	g.sampler = sample.New(g.opts.Sampler)
	if w := g.sampler.Config().PenaltyWindow; w > 0 {
		for _, t := range prompt[max(0, len(prompt)-w):] {
			g.sampler.Accept(t)
		}
	}
	g.stop = newStopMatcher(g.opts.Stop)
	g.dec = g.m.f.NewDecoder()
	if g.opts.RawPrompt != nil {
		g.parser = &rawParser{} // a completion: all text is content
		if c, ok := g.dec.(Continuer); ok && len(g.opts.RawPrompt) > 0 {
			c.Continue()
		}
	} else {
		g.parser = g.m.f.NewParser(ParserOptions{Tools: len(g.opts.Tools) > 0, ToolDefinitions: g.opts.Tools, Thinking: g.opts.Thinking})
	}
	if g.opts.Constraint != nil {
		g.cons = &constrained{c: g.opts.Constraint}
		// A constraint whose mask can take long (a grammar over a large
		// vocabulary, cold) stops when the request ends.
		if cs, ok := g.opts.Constraint.(contextSetter); ok {
			cs.SetContext(ctx)
		}
	}
	switch g.drafter() {
	case DrafterLookup:
		g.spec = newDrafter(prompt)
		g.stats.Drafter = DrafterLookup
	case DrafterMTP:
		if !g.mtpOn {
			g.m.cfg.Logger.Debug("engine: no drafts by the MTP block for this generation (a prompt with images, or the block failed in the prefill)")
			break
		}
		md, err := g.newMTPDrafter()
		if err != nil {
			g.m.cfg.Logger.Warn("engine: no drafts by the MTP block for this generation", "error", err)
			break
		}
		g.md = md
		g.stats.Drafter = DrafterMTP
	case DrafterModel:
		if slices.ContainsFunc(prompt, func(t int32) bool { return t < 0 }) {
			g.m.cfg.Logger.Debug("engine: no drafts by the draft model for a prompt with images (it reads no image rows)")
			break
		}
		md, err := g.newModelDrafter()
		if err != nil {
			g.m.cfg.Logger.Warn("engine: no drafts by the draft model for this generation", "error", err)
			break
		}
		g.md = md
		g.stats.Drafter = DrafterModel
	}
	if g.opts.Logprobs {
		g.lp.top = g.opts.TopLogprobs
		g.lp.tok, _ = g.m.f.Tokenizer() // loaded: the prompt was tokenized
	}
}

// drafter says who drafts this generation's tokens: the request's choice,
// or by default the draft model when there is one and lookup when
// Config.Speculation is on, either turned off by a Speculation of false.
// Lookup stays off with a constraint (its drafts know nothing of it), and
// a draft model drafts under a constraint only if it can go back
// (Marker).
func (g *generation) drafter() Drafter {
	d := g.opts.Drafter
	if d == DrafterDefault {
		on := g.m.cfg.Speculation || g.m.cfg.Draft != nil || g.m.mtp != nil
		if g.opts.Speculation != nil {
			on = *g.opts.Speculation
		}
		switch {
		case !on:
			return DrafterNone
		case g.m.cfg.Draft != nil:
			d = DrafterModel
		case g.m.mtp != nil:
			d = DrafterMTP
		default:
			d = DrafterLookup
		}
	}
	if c := g.opts.Constraint; c != nil {
		if _, ok := c.(Marker); d == DrafterLookup || !ok {
			return DrafterNone
		}
	}
	return d
}

// decode samples the answer. Each step's rows of logits are sampled in
// order: the first row predicts the token after the last one computed, the
// others check the draft that followed it. At the first sampled token that
// differs from the draft (or after the last row) the rest of the draft is
// dropped, and the next step computes that token and a new draft.
func (g *generation) decode(ctx context.Context, logits []float32) error {
	s := g.s
	V := g.m.b.Vocab()
	ctxLen := s.cache.MaxLen()
	g.input = g.input[:0] // the tokens of the step that made logits
	for {
		var next int32
		for i := range len(logits) / V {
			row := logits[i*V : (i+1)*V]
			drafted := i+1 < len(g.input)
			var tok int32
			var confirmed bool
			var err error
			if drafted && g.md != nil && !g.md.greedy {
				// Sampled from the draft model's distribution: the
				// rejection rule decides (see draft.go).
				tok, confirmed, err = g.verify(row, g.input[i+1], g.md.q[i*V:(i+1)*V])
			} else {
				// Greedy, or a lookup draft (a token proposed with
				// certainty): the model's own pick confirms it or not.
				tok, err = g.pick(row)
				confirmed = drafted && g.input[i+1] == tok
			}
			if err != nil {
				return err
			}
			if confirmed {
				g.stats.AcceptedTokens++
				g.acceptedIn++
			}
			reason, err := g.take(tok)
			if err != nil || reason != "" || ctx.Err() != nil {
				if err := g.keep(i + 1); err != nil {
					return err
				}
				switch {
				case err != nil || g.stopped:
					return err
				case reason == "":
					reason = StopCancelled
				}
				return g.done(reason)
			}
			if !confirmed {
				if err := g.keep(i + 1); err != nil { // the rest of the draft is wrong
					return err
				}
				next = tok
				break
			}
		}
		if g.spec != nil && len(g.input) > 1 {
			g.spec.observe(len(g.input)-1, g.acceptedIn)
		}
		if len(s.tokens) >= ctxLen {
			return g.done(StopLength)
		}
		g.input = append(g.input[:0], next)
		var err error
		if g.input, err = g.draft(ctx, g.input, ctxLen); err != nil {
			g.input = g.input[:0]
			if ctx.Err() != nil {
				return g.done(StopCancelled)
			}
			return err
		}
		g.logits = grow(g.logits, len(g.input)*V)
		var pos []Position
		if g.pos != nil {
			g.decPos = g.decPos[:0]
			for i := range g.input {
				p := int32(g.nextPos + len(s.tokens) - len(g.pos) + i)
				g.decPos = append(g.decPos, Position{T: p, Y: p, X: p})
			}
			pos = g.decPos
		}
		var hidden []float32
		if g.md != nil && g.md.mtp != nil {
			if g.hid != nil { // not drafted after the last step: feed it now
				if err := g.md.mtp.catchUp(ctx); err != nil {
					g.mtpFailed(ctx, err)
				}
			}
			if g.md != nil {
				E := g.m.mtp.E
				g.hidBuf = grow(g.hidBuf, len(g.input)*E)
				hidden = g.hidBuf[:len(g.input)*E]
			}
		}
		if err := g.m.sched.decodeHidden(ctx, s.cache, g.input, g.logits[:len(g.input)*V], pos, hidden, len(hidden)/max(1, len(g.input))); err != nil {
			if ctx.Err() != nil {
				g.input = g.input[:0]
				return g.done(StopCancelled)
			}
			return fmt.Errorf("engine: decoding at position %d: %w", len(s.tokens), err)
		}
		if hidden != nil {
			g.hid, g.hidFrom = hidden, len(s.tokens)
		}
		s.tokens = append(s.tokens, g.input...)
		logits = g.logits[:len(g.input)*V]
		g.acceptedIn = 0
	}
}

// draft appends a speculative continuation to input (the token about to be
// computed) when this generation speculates and few sequences share the
// steps: the draft competes with the other sequences for the same compute.
// Only a cancelled ctx is an error: a draft model that fails stops
// drafting for this generation, which goes on without.
func (g *generation) draft(ctx context.Context, input []int32, ctxLen int) ([]int32, error) {
	if (g.spec == nil && g.md == nil) || g.m.sched.active() > maxSpeculatingSequences {
		return input, nil
	}
	// Every draft token checked is one more generated token and one more
	// cached position.
	room := min(ctxLen-len(g.s.tokens), g.m.sched.budget) - 1
	if g.opts.MaxTokens > 0 {
		room = min(room, g.opts.MaxTokens-g.stats.GeneratedTokens-1)
	}
	if room <= 0 {
		return input, nil
	}
	before := len(input)
	if g.md != nil {
		var err error
		input, err = g.md.propose(ctx, input, min(room, g.m.cfg.DraftMax))
		if err != nil {
			if ctx.Err() != nil {
				return input[:before], ctx.Err()
			}
			g.m.cfg.Logger.Warn("engine: the draft model failed; decoding goes on without drafts", "error", err)
			g.md = nil
			input = input[:before]
		}
	} else {
		input = g.spec.draft(input, room)
	}
	if i := slices.IndexFunc(input[before:], func(t int32) bool { return t < 0 }); i >= 0 {
		input = input[:before+i] // never draft an image row's placeholder
	}
	g.stats.DraftTokens += len(input) - before
	return input, nil
}

// maxSpeculatingSequences is the most sequences in the batch for which
// drafts are still made: with more, the batch already fills the compute
// that drafts would use.
const maxSpeculatingSequences = 2

// budget is the number of tokens the answer may still take: under
// MaxTokens, and positions for all but the last token (which is never
// computed).
func (g *generation) budget() int {
	budget := g.s.cache.MaxLen() - len(g.s.tokens) + 1
	if g.opts.MaxTokens > 0 {
		budget = min(budget, g.opts.MaxTokens-g.stats.GeneratedTokens)
	}
	return budget
}

// completable reports whether the constraint's answer can be completed in
// the tokens left (true when the constraint cannot tell).
func (g *generation) completable() bool {
	mb, ok := g.opts.Constraint.(minBudgeter)
	return !ok || mb.MinBudget() <= g.budget()
}

// minBudgeter is implemented by constraints that know the fewest tokens
// they need (grammar.Constraint).
type minBudgeter interface{ MinBudget() int }

// contextSetter is implemented by constraints whose masks watch the
// request's context (grammar.Constraint).
type contextSetter interface{ SetContext(context.Context) }

// pick samples a token from one row of logits, under the logit bias and
// the constraint.
func (g *generation) pick(logits []float32) (int32, error) {
	in, err := g.constrain(logits)
	if err != nil {
		return 0, err
	}
	tok := g.sampler.Sample(in)
	if tok == sample.NoToken {
		return 0, fmt.Errorf("engine: no token can be sampled at position %d: every logit is -Inf or NaN", len(g.s.tokens))
	}
	return tok, g.record(tok, logits)
}

// constrain returns a row of logits with the logit bias added and the
// tokens the constraint does not allow at -Inf (logits itself when
// neither applies).
func (g *generation) constrain(logits []float32) ([]float32, error) {
	in := logits
	if len(g.opts.LogitBias) > 0 {
		g.biased = append(g.biased[:0], logits...)
		for id, b := range g.opts.LogitBias {
			g.biased[id] += b
		}
		in = g.biased
	}
	if g.cons != nil {
		var err error
		if in, err = g.cons.apply(in, g.budget()); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// record tells the constraint the token picked from a row of logits and
// keeps its log-probability under them when asked.
func (g *generation) record(tok int32, logits []float32) error {
	if g.cons != nil {
		if err := g.cons.c.Accept(tok); err != nil {
			return fmt.Errorf("engine: the constraint rejected sampled token %d: %w", tok, err)
		}
	}
	if g.opts.Logprobs {
		g.logprobs = append(g.logprobs, g.lp.of(logits, tok))
	}
	return nil
}

// take records a sampled token and streams its text. It returns a stop
// reason when the answer ends with this token.
func (g *generation) take(tok int32) (string, error) {
	g.stats.GeneratedTokens++
	g.s.sampled = append(g.s.sampled, tok)
	if g.spec != nil {
		g.spec.push(tok)
	}
	if g.m.f.EndOfTurn(tok) {
		return StopEndOfTurn, nil
	}
	g.sampler.Accept(tok)
	text, err := g.dec.Push(tok)
	if err != nil {
		return "", fmt.Errorf("engine: decoding generated token %d: %w", tok, err)
	}
	g.lastTok = tok
	hit, ok := g.emit(g.parser.Push(tok, text), tok)
	switch {
	case !ok:
		return StopCancelled, nil // the consumer stopped listening
	case hit:
		g.hitStop = true
		g.stats.StopString = g.stop.found
		return StopEndOfTurn, nil
	case g.endCalls:
		return StopToolCalls, nil
	case g.opts.MaxTokens > 0 && g.stats.GeneratedTokens >= g.opts.MaxTokens:
		return StopLength, nil
	}
	return "", nil
}

// keep drops the tokens of the last step after its first n from the
// session's tokens and cache (an unconfirmed draft).
func (g *generation) keep(n int) error {
	drop := len(g.input) - n
	if drop <= 0 {
		return nil
	}
	s := g.s
	s.tokens = s.tokens[:len(s.tokens)-drop]
	if err := s.cache.Truncate(len(s.tokens)); err != nil {
		return fmt.Errorf("engine: dropping %d draft tokens from the KV cache: %w", drop, err)
	}
	return nil
}

// emit sends the parser's events: reasoning (unless hidden), content
// through the stop strings, tool calls. hit reports a stop string; ok is
// false when the consumer stopped listening.
func (g *generation) emit(evs []Event, tok int32) (hit, ok bool) {
	for _, ev := range evs {
		ev.Token = tok
		switch ev.Kind {
		case EventReasoning:
			if ev.Text == "" || g.opts.HideReasoning {
				continue
			}
			if !g.send(ev) {
				return false, false
			}
		case EventContent:
			if ev.Text == "" {
				continue
			}
			out, hit := g.stop.push(ev.Text)
			if out != "" && !g.send(Event{Kind: EventContent, Text: out, Token: tok}) {
				return hit, false
			}
			if hit {
				return true, true
			}
		case EventToolCall, EventToolError:
			// A call ends the text before it: what the stop strings held
			// back (a possible start of a stop string) goes out first.
			if rest := g.stop.flush(); rest != "" && !g.send(Event{Kind: EventContent, Text: rest, Token: tok}) {
				return false, false
			}
			if ev.Kind == EventToolCall && ev.ToolCall != nil {
				call := *ev.ToolCall
				call.ID = fmt.Sprintf("call_%d", g.calls)
				g.calls++
				ev.ToolCall = &call
				g.endCalls = g.opts.EndAfterToolCall
			}
			if !g.send(ev) {
				return false, false
			}
		}
	}
	return false, true
}

// send yields ev (with the log-probabilities gathered since the last
// event), remembering when the consumer stops listening.
func (g *generation) send(ev Event) bool {
	if g.stopped {
		return false
	}
	if len(g.logprobs) > 0 && ev.Kind != EventToolCall {
		ev.Logprobs, g.logprobs = g.logprobs, nil
	}
	if !g.yield(ev, nil) {
		g.stopped = true
	}
	return !g.stopped
}

// done flushes held text (unless a stop string cut the answer) and yields
// the final event.
func (g *generation) done(reason string) error {
	if g.stopped {
		return nil
	}
	if g.hid != nil && reason != StopCancelled && g.md != nil && g.md.mtp != nil {
		// The answer's last step, for the next turn's drafts: its rows
		// the answer kept, while the session still holds them.
		if err := g.md.mtp.catchUp(context.Background()); err != nil {
			g.m.cfg.Logger.Warn("engine: the MTP block failed at the end of an answer", "error", err)
		}
	}
	if !g.hitStop && g.dec != nil {
		evs := g.parser.Push(-1, g.dec.Flush())
		hit, ok := g.emit(append(evs, g.parser.Flush()...), g.lastTok)
		if !ok {
			return nil
		}
		if rest := g.stop.flush(); !hit && rest != "" && !g.send(Event{Kind: EventContent, Text: rest, Token: g.lastTok}) {
			return nil
		}
	}
	if !g.prefilled.IsZero() {
		if d := time.Since(g.prefilled).Seconds(); d > 0 {
			g.stats.DecodeTokensPerSec = float64(g.stats.GeneratedTokens) / d
		}
	}
	g.stats.StopReason = reason
	st := g.stats
	g.send(Event{Kind: EventDone, Stats: &st})
	return nil
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// rawParser passes all text through as content (RawPrompt completions).
type rawParser struct{}

func (rawParser) Push(id int32, text string) []Event {
	if text == "" {
		return nil
	}
	return []Event{{Kind: EventContent, Text: text}}
}

func (rawParser) Flush() []Event { return nil }
