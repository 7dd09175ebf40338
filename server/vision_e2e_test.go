package server_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// TestBrowserImages runs e2e/images.mjs: on golden-vision's tiny Gemma 3
// with its projector, the page's Image button attaches a PNG, which shows
// as a thumbnail in the question, goes to the server as an image_url data:
// URL and gets an answer; paste and drop attach images too. On a text-only
// model (the fake engine) the button is hidden and a pasted image is not
// attached.
func TestBrowserImages(t *testing.T) {
	node := needE2E(t, true)
	m, err := engine.Open(sharedtest.Path(t, "golden-vision/models/gemma3-text-F32.gguf"), engine.WithThreads(2), engine.WithContext(2048),
		engine.WithProjector(sharedtest.Path(t, "golden-vision/models/mmproj-gemma3-F32.gguf")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "gemma3-vision"})
	if err != nil {
		t.Fatal(err)
	}
	vision := start(t, e, server.Config{Slots: 1, DefaultMaxTokens: 6, MaxBodyBytes: 32 << 20})
	text := start(t, &servertest.Engine{}, server.Config{Slots: 1})
	shot := os.Getenv("SMOLGO_SCREENSHOT_DIR")
	if shot == "" {
		shot = t.TempDir()
	}
	out := runNode(t, node, "images.mjs", 3*time.Minute, "SMOLGO_URL="+vision.URL, "SMOLGO_TEXT_URL="+text.URL,
		"IMAGE="+sharedtest.Path(t, "golden-vision/images/gradient-64x64.png"),
		"CHROMIUM="+chromiumPath, "SCREENSHOT_DIR="+shot, "USER_DATA_DIR="+t.TempDir())
	t.Logf("images.mjs:\n%s", out)
	if !strings.Contains(out, "images test passed") {
		t.Fatalf("images test did not pass:\n%s", out)
	}
}
