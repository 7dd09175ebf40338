package jinja_test

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/internal/jinja"
)

func Example() {
	t, err := jinja.Parse(`{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if tools %}{{ tools[0] | tojson }}{% endif %}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	vars := jinja.NewDict()
	vars.Set("messages", jinja.MustJSON(`[{"role": "user", "content": "Hi"}]`))
	vars.Set("tools", jinja.MustJSON(`[{"type": "function", "function": {"name": "now", "parameters": {}}}]`))
	out, err := t.Render(context.Background(), vars, jinja.Options{})
	fmt.Printf("%s %v\n", out, err)
	// Output:
	// <|im_start|>user
	// Hi<|im_end|>
	// {"type": "function", "function": {"name": "now", "parameters": {}}} <nil>
}
