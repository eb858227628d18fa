package dispatcher

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/policy"
)

// CheckApprovalNames reports the first name in tools that is not a
// built-in tool, or in rules that is not a policy rule, as an error naming
// it and the valid names. Flags and keys files check their approval
// settings with it, so a typo fails at startup instead of never holding
// a call.
func CheckApprovalNames(tools, rules []string) error {
	var toolNames []string
	for _, t := range BuiltinTools(DefaultConfig()) {
		toolNames = append(toolNames, t.Name)
	}
	for _, n := range tools {
		if !slices.Contains(toolNames, n) {
			return fmt.Errorf("unknown tool %q (tools: %s)", n, strings.Join(toolNames, ", "))
		}
	}
	var ruleNames []string
	for _, r := range policy.Rules() {
		ruleNames = append(ruleNames, r.Name)
	}
	for _, n := range rules {
		if !slices.Contains(ruleNames, n) {
			return fmt.Errorf("unknown policy rule %q (rules: %s)", n, strings.Join(ruleNames, ", "))
		}
	}
	return nil
}

// SplitNames splits a comma-separated list, dropping blanks and spaces.
func SplitNames(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
