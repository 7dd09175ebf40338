// Package chat reads and forces the tool calls of Liquid AI's LFM2 and
// LFM2.5 models, which write a Python list of calls between two special
// tokens:
//
//	<|tool_call_start|>[get_weather(city="Paris", days=3), get_time()]<|tool_call_end|>
//
// The prompt side is the file's own chat template, rendered by package
// family's Jinja engine (see package lfm2); this package is the answer
// side, as llama.cpp reads it (common/parsers/lfm2.cpp and
// python_style_tool_calls in common/chat-peg-parser.cpp):
//
//   - each call is a function name and keyword arguments, NAME(KEY=VALUE,
//     …); several calls are items of the list;
//   - a value is a Python or JSON literal: a string in single or double
//     quotes (with JSON's escapes, and \' in either), a JSON number,
//     True, False, None or true, false, null, a list, or a dict whose
//     keys are strings;
//   - the arguments become a JSON object in the order written: strings as
//     JSON strings, True and False as true and false, None as null,
//     numbers as written.
//
// ParseCalls reads one block's list; ToolParser reads the blocks out of a
// streamed answer, with the markers as their tokens or as text split
// across tokens; CallGrammar forces an answer to be calls.
package chat
