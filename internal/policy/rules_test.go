package policy

import "testing"

func TestRulesDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if r.Name == "" || r.Description == "" || seen[r.Name] {
			t.Errorf("bad rule info %+v", r)
		}
		seen[r.Name] = true
	}
	for _, name := range []string{RuleShellRmRoot, RuleShellMkfs, RuleShellDeviceWrite, RuleShellPrivilege, RuleShellChmod777,
		RuleShellDownloadExec, RuleShellDecodeExec, RuleShellForkBomb, RuleShellReverseShell, RuleShellDynamicCommand,
		RulePySubprocess, RulePyOSExec, RulePyPty, RulePyCtypes, RulePyDynamicImport, RulePyDynamicAttr, RulePyIntrospection,
		RulePyDynamicExec, RulePathSecret, RulePathReadOutside, RulePathWriteOutside, RuleSQLMultiple, RuleSQLReadOnly} {
		if !seen[name] {
			t.Errorf("rule %s missing from Rules()", name)
		}
	}
}
