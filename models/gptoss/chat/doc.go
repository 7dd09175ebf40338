// Package chat is gpt-oss's chat format, OpenAI's harmony: a renderer of its
// chat template and a streaming parser of its answers.
package chat
