package smollm3

// Message is one turn of a conversation: Role is "system", "user",
// "assistant" or "tool".
//
// TODO(generation): becomes an alias of chat.Message when smollm3/chat lands.
type Message struct {
	Role, Content    string
	ReasoningContent string
}
