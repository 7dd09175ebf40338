// Package chat is Qwen3-Coder's chat format.
package chat
