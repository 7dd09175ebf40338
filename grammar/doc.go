// Package grammar constrains a language model's output to a formal
// language: JSON that matches a schema, or any grammar written in a
// GBNF-like notation. It is what structured output ("response_format") is
// made of.
//
// # How it works
//
// A grammar is compiled to a byte-level pushdown automaton. Generation then
// runs in lockstep with it: before each sampling step, Constraint.Allow
// marks the tokens whose bytes keep the output a prefix of some string of
// the language (the sampler only picks among those), and Constraint.Accept
// moves the automaton over the picked token. End-of-generation tokens are
// allowed exactly when the output is complete, so the model cannot stop in
// the middle of a value, and once a value can go no further only they are.
//
//	v, _ := grammar.NewVocab(grammar.TokenBytes(tok), tok.EndOfGeneration()) // once per model
//	g, err := grammar.FromJSONSchema(schema)                                   // once per schema
//	c := g.NewConstraint(v)                                                    // once per generation
//	for {
//		c.Allow(mask)            // mask[id]: may token id come next?
//		id := sampleAmong(logits, mask)
//		if err := c.Accept(id); err != nil { ... } // cannot happen for an allowed id
//		if isEndOfGeneration(id) { break }
//	}
//
// With package engine the loop is already written: Model.NewConstraint
// builds the Vocab from the model's tokenizer once, and a constraint in the
// generation options masks every token (thinking is then turned off):
//
//	c, err := m.NewConstraint(g) // m: an *engine.Model (engine.Open returns one)
//	opts := engine.GenerateOptions{Constraint: c, MaxTokens: 256}
//	for ev, err := range session.Generate(ctx, msgs, opts) { ... }
//
// # Cost
//
// Masking must be cheap next to a decode step (about 60 ms for a 3B model
// on a laptop CPU). The vocabulary is stored as a trie of its tokens'
// bytes, flattened in depth-first order; Allow walks it once, stepping the
// automaton per trie node and skipping every subtree the grammar rejects, so
// shared prefixes are stepped once. The automaton is determinized lazily:
// sets of stacks are interned as states and each state's transitions are
// memoized per byte, so a step is one table lookup once warm. Finally the
// mask of each state is cached: inside a JSON string every content token
// leads back to the same state, so a long string costs one walk.
//
// On SmolLM3's 128,256-token vocabulary (274,520 trie nodes), measured on
// a shared 2-core machine: a cached mask costs about 2.3 µs (Allow) or
// 3.2 µs (Apply, which writes the mask into the logits), the worst uncached
// one (inside a string, where almost every token is allowed) about 2 ms,
// and a whole typical answer about 0.3 ms per token on average with every
// cache cold (BenchmarkMask): under 1% of a 3B model's decode step.
//
// In a generation loop, Apply is the one call to make per token; package
// engine does it when GenerateOptions.Constraint is set.
//
// # Bounded cost per token, whatever the grammar
//
// Grammars come from requests, so a mask's cost is bounded, at any length
// of the answer:
//
//   - An ambiguous grammar makes the recognizer follow several parses at
//     once (after k bytes of [^"]{0,1000} " " [^"]{0,1000}, up to k of
//     them), each stepped for every byte. A state holds at most MaxStacks
//     parses; past that, the ones that finish in the fewest bytes are kept
//     and the others dropped. Refusing the byte instead would strand the
//     output where it is the only way on, as inside a UTF-8 character
//     whose lead byte was allowed.
//   - A mask computes at most a fixed amount of new work (stack
//     expansions, states interned, parses dropped; memoized transitions
//     are free). Past it, the rest of the vocabulary is not allowed for
//     that token, once some token is: the output still follows the
//     grammar, on a narrower path.
//
// Narrowing always leaves a way forward: a state that is not complete has
// a byte that goes on, and a mask allows at least one token whenever the
// vocabulary spells one.
//   - A pattern's automaton is made deterministic when that does not make
//     it larger than twice its size, so that ^.{0,1000}.{0,1000}$ follows
//     one parse, not a thousand.
//   - SetContext makes a mask computation stop when the request ends.
//
// When no token at all remains (the context ended, or a mask found none
// within eight times its budget), Err says so (the context's error, or
// ErrTooAmbiguous), and package engine reports it.
// A grammar hits these bounds only if it is pathologically ambiguous: JSON
// schemas follow at most about 200 parses, and a mask of theirs does a few
// percent of the work allowed. TestMaskCostBounded has the numbers.
//
// # Budgets: answers that close in time
//
// A generation cut off by max_tokens in the middle of a value leaves JSON
// that does not parse. Constraint.Limit(n) prevents that: with n tokens
// left (counting the end-of-generation token), Allow keeps only the tokens
// after which the output can still be finished within the budget, so the
// model is steered to close the value as the budget runs out. Package
// engine calls it before every token (engine.Limiter).
//
// The guarantee is exact: if n is at least MinBudget when the limit is
// first set and then drops by one per token, every output ends complete
// within n tokens. MinBudget counts the tokens of the model's vocabulary
// that spell one fixed shortest completion (in bytes) of the current
// state, an upper bound on the true fewest; budget.go explains why the
// bound can only shrink along the way. Below MinBudget the value cannot
// close in time; masks then head for the end by the shortest way. With an
// ample budget the masks are the same as without one; a limit costs about
// 15% more per uncached mask.
//
// # JSON schemas
//
// FromJSONSchema supports what structured-output requests use (the schemas
// that zod, Pydantic and the AI SDK write):
//
//   - type: object, array, string, number, integer, boolean, null, or an
//     array of these (any of them); without a type, the keywords present
//     tell (properties: an object, pattern: a string, minimum: a number, ...);
//   - properties (generated in the schema's order), required (the others
//     may be left out), additionalProperties (false; or, for an object
//     without properties, a schema for the values of a map, a record),
//     propertyNames (a pattern, format or length for the keys of a map, or
//     an enum of them), minProperties, maxProperties;
//   - items, prefixItems (tuples; also items as an array with
//     additionalItems, as older drafts write them), minItems, maxItems;
//   - minLength, maxLength (in characters); pattern, a regular expression
//     compiled into the grammar (regex.go lists the subset: classes, groups,
//     alternation, quantifiers, anchors at the ends); format: date-time,
//     date, time, email, uuid, uri, ipv4, ipv6, hostname (formats.go says
//     exactly which strings each allows: a subset of the format that
//     validators accept); a pattern beside a format (zod 4 writes both)
//     makes their intersection;
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum: exact, on
//     integers (written digit by digit: 15..255 is 1[5-9] | [2-9][0-9] |
//     1[0-9][0-9] | 2[0-4][0-9] | 25[0-5]) and on numbers, whole bounds
//     or not (0.5 < x <= 2.25; a bounded number has no exponent and at
//     most 15 significant digits, see numbers.go); format int32 bounds
//     integers;
//   - enum, const (any JSON values), anyOf, oneOf (when its branches cannot
//     match the same value: different types, const or enum values, or a
//     required property with different const values, as in Pydantic's
//     discriminated unions);
//   - $ref to a place inside the schema ("#/$defs/Item", "#"), as Pydantic
//     writes nested models; recursive schemas (trees) work;
//   - annotations (title, description, default, examples, discriminator,
//     format password, $schema, …) are ignored; true is any value, {} too.
//
// Any other keyword (allOf, not, multipleOf, uniqueItems, contains, …), and
// any form of these the grammar cannot follow exactly, is an error that
// names the keyword and its JSON pointer, rather than output that silently
// ignores it. Where a bound is too large to write out (maxLength or maxItems
// above 1000; a pattern counted past 256 characters), the output keeps to a
// smaller one, so it still obeys the schema. With properties, additional
// properties are never generated. Whitespace between tokens is limited
// (a space, or a newline and up to 20 spaces or tabs) so that a model cannot spend its budget on
// it; numbers have at most 16 digits per part and two exponent digits, so
// that they always fit a float64. JSONObject is OpenAI's {"type":
// "json_object"}: any JSON object.
//
// ToolCalls builds the grammar of SmolLM3-style tool calls
// (<tool_call>{"name": …, "arguments": …}</tool_call>, as toolcall.Text
// writes them) for a list of functions, each call's arguments checked
// against the function's parameters schema: a server uses it to force a
// call (OpenAI's tool_choice "required", or a named function).
// ToolCallsContext with ToolCallOptions.Parallel false allows exactly one
// call (parallel_tool_calls: false). Union joins grammars into one whose
// output is a string of any of them: tool calls or a JSON answer, for an
// agent that has tools and an output type. Union knows no call syntax; the
// caller passes the calls' grammar in.
//
// # Compiling untrusted grammars
//
// Schemas and grammars come from requests, so compiling them is bounded:
// time is linear in the size of the input (a chain of 55,000 rules takes
// about 90 ms, a schema with 4,000 $refs about 220 ms: BenchmarkCompile),
// a program above MaxProgram symbols (repetitions written out) is an error
// after at most a few hundred milliseconds, and ParseContext,
// FromJSONSchemaContext and ToolCallsContext stop with ctx.Err() when the
// request's context is done.
//
// # Grammar notation
//
// Parse reads rules in the notation of llama.cpp's GBNF:
//
//	root   ::= answer ("," ws answer)*      # rule "root" is the start
//	answer ::= "yes" | "no" | [0-9]+ ("." [0-9]{1,3})?
//	ws     ::= [ \t\n]*
//
// The notation has:
//
//   - "literal" with escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH;
//   - [a-z0-9_] and negated [^"\\] character classes over Unicode code
//     points (matched as their UTF-8 bytes), . for any character;
//   - rule references, ( groups ), alternatives with |;
//   - repetition: * + ? {n} {m,} {m,n} (counts up to 1000);
//   - # comments; a rule may span lines (it ends where "name ::=" starts the
//     next).
//
// Rules are matched top-down, so left recursion (expr ::= expr "+" term) is
// rejected with an error; write it as repetition (expr ::= term ("+"
// term)*). Ambiguous grammars are fine: the automaton follows every
// alternative at once.
package grammar
