package server

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

var (
	errSessionNotFound = errors.New("session not found (it may have been evicted after being idle; create a new one)")
	errSessionBusy     = errors.New("session is busy with another generation")
	errTooManySessions = errors.New("too many sessions are generating at once; try again later")
	errClientSessions  = errors.New("every session of this client is generating; wait for one to finish")
)

// sessionStore keeps the web chat's conversations on the server, each with
// its own engine session (KV cache). Idle conversations are evicted: least
// recently used first when there are more than max, or when together they
// hold more than maxBytes; and any that was idle longer than idle.
// Conversations that are generating are never evicted.
type sessionStore struct {
	engine    Engine
	max       int
	perClient int // sessions one client may keep (0: no bound); see create
	maxBytes  int64
	idle      time.Duration
	now       func() time.Time

	mu  sync.Mutex
	lru *list.List // of *storedSession, most recently used at the front
	ids map[string]*list.Element
}

type storedSession struct {
	id       string
	client   string // who created it (create)
	sess     Session
	lastUsed time.Time
	used     bool // a generation ran in it
	busy     bool
	idle     chan struct{} // closed when a generation releases the session
}

// protectFor is how long a conversation that generated is safe from being
// evicted to make room for a new one: creating sessions in a loop evicts
// sessions that were never used, and conversations idle for longer, but
// not the ones people are chatting in.
const protectFor = time.Minute

func newSessionStore(e Engine, max, perClient int, maxBytes int64, idle time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{engine: e, max: max, perClient: perClient, maxBytes: maxBytes, idle: idle, now: now,
		lru: list.New(), ids: make(map[string]*list.Element)}
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// create makes a new conversation for client (its address; "" for none)
// and returns its id. A client that keeps perClient conversations already
// gets its own least recently used one replaced (or, when all of them are
// generating, errTooManySessions): a client creating sessions in a loop
// then churns its own, and cannot fill the store and lock others out.
func (st *sessionStore) create(client string) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.evictLocked(0)
	if st.perClient > 0 && client != "" {
		var mine []*list.Element // least recently used first
		for el := st.lru.Back(); el != nil; el = el.Prev() {
			if el.Value.(*storedSession).client == client {
				mine = append(mine, el)
			}
		}
		// Its own sessions go: those never used first, then the least
		// recently used; never one that is generating.
		kept := len(mine)
		for _, unusedOnly := range []bool{true, false} {
			for i, el := range mine {
				if kept < st.perClient {
					break
				}
				if s, _ := el.Value.(*storedSession); s != nil && !s.busy && (!unusedOnly || !s.used) {
					st.dropLocked(el)
					mine[i].Value = nil // dropped
					kept--
				}
			}
		}
		if kept >= st.perClient {
			return "", errClientSessions
		}
	}
	if st.lru.Len() >= st.max && !st.makeRoomLocked() {
		return "", errTooManySessions
	}
	s := &storedSession{id: newID("sess-"), client: client, sess: st.engine.NewSession(), lastUsed: st.now()}
	st.ids[s.id] = st.lru.PushFront(s)
	st.evictLocked(0) // the memory bound may now need older ones gone
	return s.id, nil
}

// acquire marks the conversation busy for one generation and returns its
// engine session; done must be called when the generation ends. If another
// generation holds it (typically one whose client just hung up and that is
// still winding down), acquire waits up to wait for it, then fails with
// errSessionBusy.
func (st *sessionStore) acquire(ctx context.Context, id string, wait time.Duration) (sess Session, done func(), err error) {
	var timeout <-chan time.Time
	for {
		st.mu.Lock()
		st.evictLocked(0)
		el, ok := st.ids[id]
		if !ok {
			st.mu.Unlock()
			return nil, nil, errSessionNotFound
		}
		s := el.Value.(*storedSession)
		if !s.busy {
			s.busy, s.used = true, true
			s.idle = make(chan struct{})
			s.lastUsed = st.now()
			st.lru.MoveToFront(el)
			st.mu.Unlock()
			return s.sess, func() { st.release(s) }, nil
		}
		idle := s.idle
		st.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-idle:
		case <-timeout:
			return nil, nil, errSessionBusy
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (st *sessionStore) release(s *storedSession) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s.busy = false
	close(s.idle)
	s.lastUsed = st.now()
	st.evictLocked(0)
}

// makeRoomLocked evicts one conversation for a new one: the least recently
// used that never generated, or else the least recently used that has been
// idle for protectFor. It reports whether it found one.
func (st *sessionStore) makeRoomLocked() bool {
	now := st.now()
	var pick *list.Element
	for el := st.lru.Back(); el != nil; el = el.Prev() {
		s := el.Value.(*storedSession)
		if s.busy {
			continue
		}
		if !s.used {
			pick = el
			break
		}
		if pick == nil && now.Sub(s.lastUsed) >= protectFor {
			pick = el
		}
	}
	if pick == nil {
		return false
	}
	st.dropLocked(pick)
	return true
}

// remove deletes a conversation. It reports whether it existed; a busy one
// is unlinked at once and its generation finishes on its own.
func (st *sessionStore) remove(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.ids[id]
	if ok {
		st.lru.Remove(el)
		delete(st.ids, id)
	}
	return ok
}

// len reports the number of conversations and the bytes they hold.
func (st *sessionStore) stats() (n int, bytes int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lru.Len(), st.bytesLocked()
}

func (st *sessionStore) bytesLocked() int64 {
	var total int64
	for el := st.lru.Front(); el != nil; el = el.Next() {
		total += el.Value.(*storedSession).sess.MemoryBytes()
	}
	return total
}

// evictLocked drops idle conversations: those idle too long, then the least
// recently used until there is room for extra more and the memory bound holds.
func (st *sessionStore) evictLocked(extra int) {
	now := st.now()
	for el := st.lru.Back(); el != nil; {
		prev := el.Prev()
		s := el.Value.(*storedSession)
		if !s.busy && st.idle > 0 && now.Sub(s.lastUsed) > st.idle {
			st.dropLocked(el)
		}
		el = prev
	}
	for el := st.lru.Back(); el != nil && st.lru.Len()+extra > st.max; {
		prev := el.Prev()
		if !el.Value.(*storedSession).busy {
			st.dropLocked(el)
		}
		el = prev
	}
	if st.maxBytes <= 0 {
		return
	}
	total := st.bytesLocked()
	for el := st.lru.Back(); el != nil && total > st.maxBytes; {
		prev := el.Prev()
		s := el.Value.(*storedSession)
		if !s.busy {
			total -= s.sess.MemoryBytes()
			st.dropLocked(el)
		}
		el = prev
	}
}

func (st *sessionStore) dropLocked(el *list.Element) {
	s := st.lru.Remove(el).(*storedSession)
	delete(st.ids, s.id)
	s.sess.Reset()
}
