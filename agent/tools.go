package agent

import (
	"context"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/openai/openai-go/v3"
)

// Tools is what the loop needs from the dispatcher: the single entry that
// runs a tool call, the tool list and system prompt to show the model, and
// the approval decisions. The loop never executes anything except through
// Run and Approve. *dispatcher.Dispatcher has Run, Approve and Reject with
// these signatures; OpenAITools and SystemPrompt come from its Registry.
type Tools interface {
	// Run validates, authorises and executes one call. Every outcome,
	// including platform failures, is a Result; Run never panics on bad
	// input. A Result with StatusPendingApproval carries an ApprovalToken.
	Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
	// OpenAITools lists the tools in OpenAI's function-tool form.
	OpenAITools() []openai.ChatCompletionToolUnionParam
	// SystemPrompt is the system message describing the tools and rules.
	SystemPrompt() string
	// Approve runs the call held under token, exactly once, and returns
	// its Result. An unknown, expired or used token gives a rejected Result
	// and an error.
	Approve(ctx context.Context, token string) (dispatcher.Result, error)
	// Reject drops the call held under token without running it; the
	// Result (shown to the model) says why. Errors as for Approve.
	Reject(ctx context.Context, token, reason string) (dispatcher.Result, error)
}
