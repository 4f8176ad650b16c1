package lead_test

import (
	"context"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/lead"
)

type agentTool = agent.Tool

func lookupTool() agent.Tool {
	return agent.Tool{Name: "lookup", Execute: func(context.Context, agent.ToolCall) agent.ToolResult {
		return agent.ToolResult{Content: "TOOL-OUTPUT-HIDDEN"}
	}}
}

// whoamiTool reports the caller the runtime hands it, whatever the model put in its arguments.
func whoamiTool(seen chan<- lead.Caller) agent.Tool {
	return agent.Tool{Name: "whoami", Execute: func(ctx context.Context, _ agent.ToolCall) agent.ToolResult {
		c, _ := lead.CallerFrom(ctx)
		seen <- c
		return agent.ToolResult{Content: "ok"}
	}}
}
