package engine

import "strings"

// stopMatcher finds stop strings in streamed text. Text that could still be
// the beginning of a stop string is held back until the next piece decides
// it, so that a stop string split across tokens never reaches the caller.
type stopMatcher struct {
	stops []string
	held  string
	found string // the stop string that matched
}

func newStopMatcher(stops []string) *stopMatcher {
	m := &stopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// push adds text and returns what can be released, and whether a stop string
// was found (then out is the text before it, and the rest is dropped).
func (m *stopMatcher) push(text string) (out string, stopped bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.held + text
	first := -1
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (first < 0 || i < first) {
			first, m.found = i, s
		}
	}
	if first >= 0 {
		m.held = ""
		return buf[:first], true
	}
	keep := 0 // the longest suffix of buf that is a proper prefix of a stop string
	for _, s := range m.stops {
		for n := min(len(s)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, s[:n]) {
				keep = n
				break
			}
		}
	}
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the held-back text at the end of the stream.
func (m *stopMatcher) flush() string {
	out := m.held
	m.held = ""
	return out
}
