// Package client is the official Go client of the Airlock HTTP API.
//
// A Client talks to a running `airlock serve`: it lists the tools, runs
// OpenAI tool calls (one-shot or in a session that keeps state), moves
// files in and out of a session's work folder, downloads the artifacts a
// call produced, lists, interrupts and restarts sessions, and starts agent
// runs whose events it follows as Server-Sent Events, resuming with
// Last-Event-ID when a stream drops.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(key))
//	res, err := c.CallTool(ctx, client.ToolCall{Name: "run_python",
//		Arguments: map[string]any{"code": "print(6*7)"}})
//	fmt.Print(res.Result.Stdout)
//
// A call can also be streamed: CallToolStream and CallSessionToolStream
// return a *CallStream whose Next hands over stdout, stderr, display and
// artifact events as the code produces them, then io.EOF; Result then
// returns the same *wire.ToolCallResponse the non-streaming call answers
// with.
//
//	s, err := c.CallToolStream(ctx, call)
//	defer s.Close()
//	for ev, err := s.Next(); err == nil; ev, err = s.Next() {
//		fmt.Print(ev.Text)
//	}
//	res, err := s.Result() // a platform failure is an *APIError here
//
// What the user's code did is a result, not an error: a call whose code
// raised, timed out or was refused by policy returns a
// *wire.ToolCallResponse with Result.Status set ("error", "timeout",
// "rejected", ...). An error
// is returned only when the platform refused or failed the request; it is
// then an *APIError carrying the API's error code, message, details, HTTP
// status and Retry-After:
//
//	var ae *client.APIError
//	if errors.As(err, &ae) && ae.Code == core.ErrBusy {
//		time.Sleep(ae.RetryAfter)
//	}
//
// The methods follow the routes of the OpenAPI document the server serves
// at /openapi.json, one method per operation, named after its operationId;
// the bodies they send and return are the types of package wire, the ones
// the server itself encodes.
package client
