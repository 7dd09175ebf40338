package server_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/server"
)

// TestBrowserModelPicker runs e2e/models.mjs against a Router of two chat
// models and an embedding model (all fakes): the page's model picker, the
// footer's loading state, a conversation moved to another model, the Image
// button of the model that takes images only.
func TestBrowserModelPicker(t *testing.T) {
	node := needE2E(t, true)
	f := newFakeModels()
	alpha := f.spec("alpha", fakeOpts{tokenDelay: 5 * time.Millisecond})
	alpha.Images = true // the page's Image button shows for alpha, not for beta
	_, ts := startRouter(t, []server.ModelSpec{
		alpha,
		f.spec("beta", fakeOpts{tokenDelay: 5 * time.Millisecond, loadDelay: 1500 * time.Millisecond}),
		f.spec("gamma", fakeOpts{kind: server.KindEmbedding}),
	}, server.RouterConfig{})
	shot := os.Getenv("SMOLGO_SCREENSHOT_DIR")
	if shot == "" {
		shot = t.TempDir()
	}
	out := runNode(t, node, "models.mjs", 2*time.Minute, "SMOLGO_URL="+ts.URL,
		"CHROMIUM="+chromiumPath, "SCREENSHOT_DIR="+shot, "USER_DATA_DIR="+t.TempDir())
	t.Logf("models.mjs:\n%s", out)
	if !strings.Contains(out, "models test passed") {
		t.Fatalf("models test did not pass:\n%s", out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, want := range map[string]int64{"alpha": 2, "beta": 2} {
		var calls int64
		for _, e := range f.engines[name] {
			calls += e.Counters().Calls
		}
		if calls != want {
			t.Errorf("%s generated %d answers; want %d", name, calls, want)
		}
	}
	if f.loads["gamma"] != 0 {
		t.Errorf("the embedding model was loaded %d times by a chat page", f.loads["gamma"])
	}
}
