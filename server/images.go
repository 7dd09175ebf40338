package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/engine"
)

// Images arrive inside messages as the APIs spell them: OpenAI's
// image_url parts ({"type": "image_url", "image_url": {"url": …}}), the
// Responses API's input_image ({"type": "input_image", "image_url": …}) and
// Anthropic's image blocks ({"type": "image", "source": {"type": "base64",
// "media_type": …, "data": …}}). Each becomes an engine.Image at an
// engine.ImageMarker in the message's text. The bytes come inline, as a
// base64 data: URL or block: a server that fetched http(s) URLs for its
// clients would be an open proxy, so remote URLs are refused with an error
// saying how to send the image instead. Whether the model takes images, and
// whether the bytes are an image it can read, the engine decides (a 400
// either way).

// imageFromURL reads an image URL: a data: URL whose data is base64.
func imageFromURL(url, param string) (engine.Image, *apiError) {
	switch {
	case strings.HasPrefix(url, "http://"), strings.HasPrefix(url, "https://"):
		return engine.Image{}, badRequest(param, "%s: remote image URLs are not fetched by this server; send the image inline as a data: URL (data:image/png;base64,...)", param)
	case !strings.HasPrefix(url, "data:"):
		return engine.Image{}, badRequest(param, "%s: an image URL must be a data: URL (data:image/png;base64,...)", param)
	}
	meta, data, ok := strings.Cut(url[len("data:"):], ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return engine.Image{}, badRequest(param, "%s: the data: URL must be base64 (data:image/png;base64,...)", param)
	}
	mediaType, _, _ := strings.Cut(meta, ";")
	if ae := checkMediaType(mediaType, param); ae != nil {
		return engine.Image{}, ae
	}
	return decodeImage(data, param)
}

// imageMediaTypes are the media types of the formats the engine decodes.
var imageMediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// checkMediaType refuses a declared media type that is not an image format
// the engine reads (an empty one, which data: URLs allow, passes: the bytes
// say what they are). A declared image type is not checked against the
// bytes: the decoder reads the format from them, as llama.cpp's does.
func checkMediaType(mediaType, param string) *apiError {
	mt := strings.ToLower(strings.TrimSpace(mediaType))
	if mt == "" || mt == "image/jpg" || slices.Contains(imageMediaTypes, mt) {
		return nil
	}
	return badRequest(param, "%s: media type %q is not an image type this server reads (%s)", param, mediaType, strings.Join(imageMediaTypes, ", "))
}

// decodeImage reads base64 image bytes (standard or URL alphabet, padded
// or not).
func decodeImage(data, param string) (engine.Image, *apiError) {
	data = strings.TrimSpace(data)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(data); err == nil {
			if len(b) == 0 {
				return engine.Image{}, badRequest(param, "%s: the image is empty", param)
			}
			return engine.Image{Data: b}, nil
		}
	}
	return engine.Image{}, badRequest(param, "%s: the image data is not valid base64", param)
}

// inputPart is one part of an OpenAI or Responses content array.
type inputPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"` // {"url": …} (chat) or a string (Responses)
	FileID   string          `json:"file_id"`
}

// mediaContent reads content that is a string, null, or an array of parts:
// text parts of textTypes (their texts joined) and image parts of
// imageTypes, each put in as an engine.ImageMarker.
func mediaContent(raw json.RawMessage, param string, textTypes, imageTypes []string) (string, []engine.Image, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, badRequest(param, "%s must be a string or an array of content parts", param)
	}
	var b strings.Builder
	var imgs []engine.Image
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		switch {
		case slices.Contains(textTypes, p.Type):
			b.WriteString(p.Text)
		case slices.Contains(imageTypes, p.Type):
			url, ae := partImageURL(p, pp)
			if ae != nil {
				return "", nil, ae
			}
			img, ae := imageFromURL(url, pp+".image_url")
			if ae != nil {
				return "", nil, ae
			}
			imgs = append(imgs, img)
			b.WriteString(engine.ImageMarker)
		default:
			return "", nil, badRequest(pp+".type", "%s: content part type %q is not supported (only %q)", pp, p.Type, slices.Concat(textTypes, imageTypes))
		}
	}
	return b.String(), imgs, nil
}

// partImageURL is an image part's URL: {"url": …} or a plain string.
func partImageURL(p inputPart, param string) (string, *apiError) {
	if p.FileID != "" && len(p.ImageURL) == 0 {
		return "", badRequest(param+".file_id", "%s: images by file_id are not supported; send the image inline as a data: URL", param)
	}
	var url string
	if json.Unmarshal(p.ImageURL, &url) == nil && url != "" {
		return url, nil
	}
	var obj struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(p.ImageURL, &obj) == nil && obj.URL != "" {
		return obj.URL, nil
	}
	return "", badRequest(param+".image_url", "%s: an image part needs image_url with a url", param)
}

// anthropicImage reads an Anthropic image block's source.
func anthropicImage(source json.RawMessage, param string) (engine.Image, *apiError) {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if err := json.Unmarshal(source, &src); err != nil {
		return engine.Image{}, badRequest(param+".source", "%s: an image block needs a source object", param)
	}
	switch src.Type {
	case "base64":
		if ae := checkMediaType(src.MediaType, param+".source.media_type"); ae != nil {
			return engine.Image{}, ae
		}
		return decodeImage(src.Data, param+".source.data")
	case "url":
		return imageFromURL(src.URL, param+".source.url")
	}
	return engine.Image{}, badRequest(param+".source.type", "%s: image source type %q is not supported (use base64)", param, src.Type)
}
