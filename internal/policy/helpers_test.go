package policy

// testPolicy is the Analyzer with every rule on and the production folders.
func testPolicy() *Analyzer { return New(Config{WorkDir: "/work", InputDir: "/workspace"}) }

// rulesOf returns the rule names of vs.
func rulesOf(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

// hasRule reports whether vs contains rule.
func hasRule(vs []Violation, rule string) bool { return containsRule(vs, rule) }
