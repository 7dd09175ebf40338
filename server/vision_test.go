package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	_ "github.com/smolgo/smolgo/models" // registers the families and the vision projector loader
	"github.com/smolgo/smolgo/server"
)

// rawTemplate renders the first message as it is, so that the prompt is
// golden-vision's prompt text exactly ("Look: <__media__> What is it?").
const rawTemplate = "{{ messages[0]['content'] }}"

// openVision opens golden-vision's tiny Gemma 3 text model, with its tiny
// projector when proj is true.
func openVision(t *testing.T, proj bool) (*engine.Model, server.Engine) {
	t.Helper()
	mmproj := ""
	if proj {
		mmproj = "mmproj-gemma3-F32"
	}
	return openVisionModel(t, "gemma3-text-F32", mmproj)
}

// openVisionModel opens golden-vision's text model text (a file stem) with
// its projector mmproj (none when "").
func openVisionModel(t *testing.T, text, mmproj string) (*engine.Model, server.Engine) {
	t.Helper()
	opts := []engine.Option{engine.WithThreads(2), engine.WithContext(512), engine.WithChatTemplate(rawTemplate)}
	if mmproj != "" {
		opts = append(opts, engine.WithProjector(sharedtest.Path(t, "golden-vision/models/"+mmproj+".gguf")))
	}
	m, err := engine.Open(sharedtest.Path(t, "golden-vision/models/"+text+".gguf"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return m, e
}

func visionImage(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dataURL(mediaType string, b []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// imageRequests are the three APIs' requests asking about one image: the
// content "Look: " + image + " What is it?", greedy, n tokens.
func imageRequests(url string, n int) map[string][2]string {
	q := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	return map[string][2]string{
		"chat": {"/v1/chat/completions", fmt.Sprintf(`{"model":"m","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":[
			{"type":"text","text":"Look: "},{"type":"image_url","image_url":{"url":%s}},{"type":"text","text":" What is it?"}]}]}`, n, q(url))},
		"responses": {"/v1/responses", fmt.Sprintf(`{"model":"m","temperature":0,"max_output_tokens":%d,"input":[{"role":"user","content":[
			{"type":"input_text","text":"Look: "},{"type":"input_image","image_url":%s},{"type":"input_text","text":" What is it?"}]}]}`, n, q(url))},
		"messages": {"/v1/messages", fmt.Sprintf(`{"model":"m","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":[
			{"type":"text","text":"Look: "},{"type":"image","source":{"type":"base64","media_type":"image/png","data":%s}},{"type":"text","text":" What is it?"}]}]}`,
			n, q(url[strings.IndexByte(url, ',')+1:]))},
	}
}

// answerText is the generated text and prompt token count of a reply of
// any of the three APIs.
func answerText(t *testing.T, api string, body []byte) (string, int) {
	t.Helper()
	var r struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			InputTokens  int `json:"input_tokens"`
			CacheRead    int `json:"cache_read_input_tokens"`
			CacheMade    int `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v: %s", api, err, body)
	}
	var text strings.Builder
	switch api {
	case "chat":
		for _, c := range r.Choices {
			text.WriteString(c.Message.Content)
		}
	case "responses":
		for _, o := range r.Output {
			for _, c := range o.Content {
				text.WriteString(c.Text)
			}
		}
	case "messages":
		for _, c := range r.Content {
			text.WriteString(c.Text)
		}
	}
	u := r.Usage
	return text.String(), max(u.PromptTokens, u.InputTokens+u.CacheRead+u.CacheMade)
}

// TestVisionAPIs asks golden-vision's tiny Gemma 3, Qwen2-VL and
// Qwen2.5-VL about an image through each API (OpenAI image_url, Responses
// input_image, Anthropic image block): each answer is the engine's own
// greedy answer to the same message, and the prompt counts mtmd's rows
// (the text tokens and the image's rows: 16 for Gemma 3 and Qwen2-VL's
// 4 × 4 merged patches, 9 for Qwen2.5-VL's 3 × 3).
func TestVisionAPIs(t *testing.T) {
	for _, c := range []struct {
		text, mmproj string
		rows         int
	}{
		{"gemma3-text-F32", "mmproj-gemma3-F32", 16},
		{"qwen2vl-text-F32", "mmproj-qwen2vl-F32", 16},
		{"qwen2vl-text-F32", "mmproj-qwen25vl-F32", 9},
	} {
		t.Run(c.mmproj, func(t *testing.T) {
			m, e := openVisionModel(t, c.text, c.mmproj)
			png := visionImage(t, "gradient-64x64.png")
			const n = 6
			var want strings.Builder
			var st engine.Stats
			msgs := []engine.Message{{Role: "user", Content: "Look: " + engine.ImageMarker + " What is it?", Images: []engine.Image{{Data: png}}}}
			for ev, err := range m.NewSession().Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: n}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Kind == engine.EventContent {
					want.WriteString(ev.Text)
				}
				if ev.Stats != nil {
					st = *ev.Stats
				}
			}
			if st.ImageRows != c.rows || want.Len() == 0 {
				t.Fatalf("engine: %d image rows (want %d), answer %q", st.ImageRows, c.rows, want.String())
			}
			ts := start(t, e, server.Config{})
			if got := modalities(t, ts.URL); got != "text,image" {
				t.Errorf("/v1/models input_modalities %q, want text,image", got)
			}
			for api, req := range imageRequests(dataURL("image/png", png), n) {
				t.Run(api, func(t *testing.T) {
					code, body := postJSON(t, ts.URL+req[0], req[1])
					if code != http.StatusOK {
						t.Fatalf("status %d: %s", code, body)
					}
					got, prompt := answerText(t, api, body)
					if got != want.String() {
						t.Errorf("answer %q, the engine's %q", got, want.String())
					}
					if prompt != st.PromptTokens {
						t.Errorf("prompt of %d tokens, the engine's %d", prompt, st.PromptTokens)
					}
				})
			}
		})
	}
}

// TestVisionQwenHostileSizes: a Qwen2-VL model refuses a picture of sides
// in a ratio over 200 (a strip a million pixels long, which would resize to
// a million by 16) with a 400 naming it, and answers after it.
func TestVisionQwenHostileSizes(t *testing.T) {
	_, e := openVisionModel(t, "qwen2vl-text-F32", "mmproj-qwen2vl-F32")
	var strip bytes.Buffer
	if err := png.Encode(&strip, image.NewGray(image.Rect(0, 0, 1_000_000, 1))); err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	req := imageRequests(dataURL("image/png", strip.Bytes()), 2)["chat"]
	code, body := postJSON(t, ts.URL+req[0], req[1])
	if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), "1000000x1 image has sides in a ratio over 200") {
		t.Errorf("a 1000000x1 PNG: status %d, body %.300s; want 400 naming the ratio", code, body)
	}
	req = imageRequests(dataURL("image/png", visionImage(t, "gradient-64x64.png")), 2)["chat"]
	if code, body := postJSON(t, ts.URL+req[0], req[1]); code != http.StatusOK {
		t.Fatalf("after the strip: status %d: %s", code, body)
	}
}

// modalities is GET /v1/models' input_modalities of the served model,
// joined by commas.
func modalities(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			InputModalities []string `json:"input_modalities"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 1 {
		t.Fatalf("/v1/models: %v, %d models", err, len(list.Data))
	}
	return strings.Join(list.Data[0].InputModalities, ",")
}

// errorMessage is an error reply's message (OpenAI's and Anthropic's
// shapes alike).
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(body, &e)
	return e.Error.Message
}

// pngHeader is a PNG signature and IHDR chunk (with its CRC) of a w × h
// RGB picture, and nothing after it: a header that promises a picture.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0) // 8-bit RGB, deflate, no filter, no interlace
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(ihdr)-4)))
	b.Write(ihdr)
	b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(ihdr)))
	return b.Bytes()
}

// TestVisionHostileImages: every kind of bad image input gets a 400
// naming what is wrong (never a panic, nor a huge allocation), and the
// server goes on serving.
func TestVisionHostileImages(t *testing.T) {
	_, e := openVision(t, true)
	good := visionImage(t, "gradient-64x64.png")
	var jpg bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	if err := jpeg.Encode(&jpg, img, nil); err != nil {
		t.Fatal(err)
	}
	var gf bytes.Buffer
	if err := gif.Encode(&gf, img, nil); err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	cases := []struct {
		name, url, want string
	}{
		{"bad base64", "data:image/png;base64,iVBOR!!not*base64", "not valid base64"},
		{"empty", "data:image/png;base64,", "empty"},
		{"not base64 encoded", "data:image/png," + string(good[:8]), "must be base64"},
		{"remote URL", "https://example.com/cat.png", "remote image URLs are not fetched"},
		{"not a data URL", "file:///etc/passwd", "must be a data: URL"},
		{"wrong media type", dataURL("application/pdf", good), `media type "application/pdf"`},
		{"unknown format", dataURL("image/png", []byte("BM this is a bitmap, or is it")), "not a PNG, JPEG"},
		{"huge dimensions", dataURL("image/png", pngHeader(30000, 30000)), "30000x30000"},
		{"zero width", dataURL("image/png", pngHeader(0, 10)), "png"},
		{"truncated PNG", dataURL("image/png", good[:len(good)/2]), "decoding the png"},
		{"truncated PNG header", dataURL("image/png", good[:20]), "png header"},
		{"truncated GIF", dataURL("image/gif", gf.Bytes()[:gf.Len()*2/3]), "decoding the gif"},
		{"truncated JPEG", dataURL("image/jpeg", jpg.Bytes()[:jpg.Len()/2]), "decoding the jpeg"},
	}
	for _, c := range cases {
		for api, req := range imageRequests(c.url, 2) {
			if api == "messages" && !strings.HasPrefix(c.url, "data:image/png;base64,") {
				continue // an Anthropic block carries base64 data, not a URL
			}
			t.Run(c.name+"/"+api, func(t *testing.T) {
				code, body := postJSON(t, ts.URL+req[0], req[1])
				if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), c.want) {
					t.Errorf("status %d, body %s; want 400 saying %q", code, body, c.want)
				}
			})
		}
	}
	// Anthropic's own shapes: a media type that is no image, a source type
	// that is not base64.
	for _, c := range []struct{ name, source, want string }{
		{"media type", `{"type":"base64","media_type":"text/html","data":"PGh0bWw+"}`, `media type "text/html"`},
		{"source type", `{"type":"file","file_id":"f"}`, `image source type "file"`},
		{"url", `{"type":"url","url":"http://169.254.169.254/"}`, "remote image URLs"},
	} {
		t.Run("anthropic "+c.name, func(t *testing.T) {
			code, body := postJSON(t, ts.URL+"/v1/messages", `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":[{"type":"image","source":`+c.source+`}]}]}`)
			if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), c.want) {
				t.Errorf("status %d, body %s; want 400 saying %q", code, body, c.want)
			}
		})
	}
	// More images than the context holds.
	var parts []string
	for range 40 { // 40 × 18 rows > 512

		parts = append(parts, `{"type":"image_url","image_url":{"url":"`+dataURL("image/png", good)+`"}}`)
	}
	code, body := postJSON(t, ts.URL+"/v1/chat/completions", `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":[`+strings.Join(parts, ",")+`]}]}`)
	if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), "the context holds 512") {
		t.Errorf("40 images: status %d, body %.300s; want 400 saying the context is too small", code, body)
	}
	// The server still serves.
	req := imageRequests(dataURL("image/png", good), 2)["chat"]
	if code, body := postJSON(t, ts.URL+req[0], req[1]); code != http.StatusOK {
		t.Fatalf("after the bad requests: status %d: %s", code, body)
	}
}

// TestVisionTextOnlyModel: an image sent to a model opened without a
// projector is a 400 that says so.
func TestVisionTextOnlyModel(t *testing.T) {
	_, e := openVision(t, false)
	ts := start(t, e, server.Config{})
	if got := modalities(t, ts.URL); got != "text" {
		t.Errorf("/v1/models input_modalities %q, want text", got)
	}
	for api, req := range imageRequests(dataURL("image/png", visionImage(t, "gradient-64x64.png")), 2) {
		t.Run(api, func(t *testing.T) {
			code, body := postJSON(t, ts.URL+req[0], req[1])
			if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), "takes no images") {
				t.Errorf("status %d, body %s; want 400 saying the model takes no images", code, body)
			}
		})
	}
}

// The web page's /api/info says whether the model takes images, in
// llama-server's /props shape ("modalities": {"vision": …}).
func TestInfoModalities(t *testing.T) {
	for _, proj := range []bool{false, true} {
		_, e := openVision(t, proj)
		ts := start(t, e, server.Config{})
		resp, err := http.Get(ts.URL + "/api/info")
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Modalities map[string]bool `json:"modalities"`
		}
		decode(t, resp.Body, &info)
		resp.Body.Close()
		if got, ok := info.Modalities["vision"]; !ok || got != proj {
			t.Errorf("with a projector %v: /api/info modalities %v", proj, info.Modalities)
		}
	}
}
