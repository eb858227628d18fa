package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/dispatcher"
)

const toolsUsage = `usage: airlock tools list [--json] [--prompt]
       airlock tools cost [--rounds 20] [--json]
`

// runTools implements `airlock tools list|cost` on the built-in registry
// (no executor is needed: nothing runs).
func runTools(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, toolsUsage)
		return 2
	}
	reg := dispatcher.BuiltinRegistry(dispatcher.DefaultConfig())
	switch args[0] {
	case "list":
		return toolsList(reg, args[1:], stdout, stderr)
	case "cost":
		return toolsCost(reg, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, toolsUsage)
		return 0
	}
	fmt.Fprintf(stderr, "airlock tools: unknown subcommand %q\n%s", args[0], toolsUsage)
	return 2
}

// toolsList prints the registry: a table, the JSON specs, or the system prompt.
func toolsList(reg *dispatcher.Registry, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the tools as JSON (name, description, parameters, risk)")
	prompt := fs.Bool("prompt", false, "print the generated system-prompt text")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reg.Specs()); err != nil {
			return command{"tools list", stderr}.fail(1, err)
		}
	case *prompt:
		fmt.Fprint(stdout, reg.SystemPrompt())
	default:
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tRISK\tPARAMETERS\tAPPROVAL")
		for _, t := range reg.Tools() {
			approval := ""
			if t.NeedsApproval {
				approval = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Risk, paramList(t.Parameters), approval)
		}
		if err := tw.Flush(); err != nil {
			return 1
		}
	}
	return 0
}

// paramList renders "a, b?" from a schema: required names, then optional ones with "?".
func paramList(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	req := map[string]bool{}
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				req[s] = true
			}
		}
	}
	var first, rest []string
	for _, name := range sortedNames(props) {
		if req[name] {
			first = append(first, name)
		} else {
			rest = append(rest, name+"?")
		}
	}
	out := ""
	for i, n := range append(first, rest...) {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

// toolsCost prints the per-round token cost of the tool schemas and the total over N rounds.
func toolsCost(reg *dispatcher.Registry, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 20, "number of model rounds (each sends the tool schemas again)")
	asJSON := fs.Bool("json", false, "print the numbers as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *rounds < 1 {
		return command{"tools cost", stderr}.failf(2, "--rounds must be at least 1")
	}
	c := reg.SchemaCost()
	if *asJSON {
		out := struct {
			dispatcher.Cost
			Rounds      int `json:"rounds"`
			TotalTokens int `json:"total_tokens"`
		}{c, *rounds, (c.ToolsTokens + c.PromptTokens) * *rounds}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return command{"tools cost", stderr}.fail(1, err)
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCHARS\t~TOKENS\t")
	for _, t := range c.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", t.Name, t.Chars, t.Tokens)
	}
	fmt.Fprintf(tw, "tools list (compact JSON)\t%d\t%d\t\n", c.ToolsChars, c.ToolsTokens)
	fmt.Fprintf(tw, "system prompt text\t%d\t%d\t\n", c.PromptChars, c.PromptTokens)
	if err := tw.Flush(); err != nil {
		return 1
	}
	per := c.ToolsTokens + c.PromptTokens
	fmt.Fprintf(stdout, "\nper round: ~%d tokens (tools %d + prompt %d)\n", per, c.ToolsTokens, c.PromptTokens)
	fmt.Fprintf(stdout, "over %d rounds: ~%d tokens\n", *rounds, per**rounds)
	fmt.Fprintf(stdout, "(%s)\n", c.Method)
	return 0
}
