package dispatcher

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/policy"
)

// ruleChecker runs a tool's declared checks through the policy analysis
// and knows which firing rules hold a call for approval instead of
// refusing it.
type ruleChecker struct {
	cfg      Config
	pol      *policy.Analyzer
	approval map[string]bool
}

// newRuleChecker builds the rule checker for cfg.
func newRuleChecker(cfg Config) *ruleChecker {
	g := &ruleChecker{cfg: cfg, pol: cfg.analysis(), approval: map[string]bool{}}
	for _, r := range cfg.Policy.RequireApproval {
		g.approval[r] = true
	}
	return g
}

// analysis builds the static analysis for c's folders and rule switches.
func (c Config) analysis() *policy.Analyzer {
	return policy.New(policy.Config{
		WorkDir:       c.WorkDir,
		InputDir:      c.InputDir,
		DisableShell:  c.Policy.DisableShell,
		DisablePython: c.Policy.DisablePython,
		DisablePaths:  c.Policy.DisablePaths,
		Disabled:      c.Policy.Disabled,
	})
}

// needsApproval reports whether a firing rule holds the call instead of refusing.
func (g *ruleChecker) needsApproval(rule string) bool { return g.approval[rule] }

// check runs the tool's declared checks on args and returns every
// violation found, in check order. approved rules are skipped.
func (g *ruleChecker) check(t *registered, call Call, args Args, approved []string) []violation {
	var out []violation
	base := g.cfg.InputDir
	if call.SessionID != "" {
		base = g.cfg.WorkDir
	}
	for _, c := range t.Checks {
		v, ok := args[c.Arg].(string)
		if !ok {
			continue
		}
		var found []violation
		switch c.Kind {
		case CheckShell:
			found = g.pol.Shell(v)
		case CheckPython:
			found = g.pol.Python(v)
		case CheckReadPath, CheckWritePath:
			b := base
			if c.Kind == CheckWritePath {
				b = g.cfg.WorkDir // relative writes always start in the work folder
			}
			if vi := g.pol.Path(v, b, c.Kind == CheckWritePath); vi != nil {
				found = []violation{*vi}
			}
		case CheckSQL:
			if vi := g.pol.SQL(v); vi != nil {
				found = []violation{*vi}
			}
		}
		for _, f := range found {
			if g.pol.On(f.Rule) && !slices.Contains(approved, f.Rule) && !slices.ContainsFunc(out, func(o violation) bool { return o.Rule == f.Rule }) {
				out = append(out, f)
			}
		}
	}
	return out
}

// quoteShort quotes s for a message, shortened to 80 characters.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = string(r[:77]) + "..."
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}
