package builder

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
)

// failurePattern turns a known log line into what failed.
type failurePattern struct {
	re   *regexp.Regexp
	msg  func(m []string) string
	code core.Code
}

// failurePatterns are tried in order on every line of the failed step;
// the matches of the first pattern that matches are all reported.
var failurePatterns = []failurePattern{
	{regexp.MustCompile(`^E: Unable to locate package (\S+)`), func(m []string) string { return fmt.Sprintf("apt package %q not found", m[1]) }, core.ErrInvalid},
	{regexp.MustCompile(`^E: Package '([^']+)' has no installation candidate`), func(m []string) string { return fmt.Sprintf("apt package %q has no installation candidate", m[1]) }, core.ErrInvalid},
	{regexp.MustCompile(`^E: Version '([^']+)' for '([^']+)' was not found`), func(m []string) string { return fmt.Sprintf("apt package %q version %q not found", m[2], m[1]) }, core.ErrInvalid},
	{regexp.MustCompile(`^E: Unable to correct problems, you have held broken packages`), func([]string) string { return "apt could not resolve the packages' dependencies" }, core.ErrInvalid},
	{regexp.MustCompile(`(?:Could not resolve|Temporary failure resolving) '([^']+)'`), func(m []string) string {
		return fmt.Sprintf("cannot reach %q (the Debian mirror or package index)", m[1])
	}, core.ErrUnavailable},
	{regexp.MustCompile(`^E: Failed to fetch (\S+)\s*(.*)`), func(m []string) string { return fmt.Sprintf("apt could not download %s: %s", m[1], m[2]) }, core.ErrUnavailable},
	{regexp.MustCompile(`^ERROR: Could not find a version that satisfies the requirement (\S+)`), func(m []string) string {
		return fmt.Sprintf("pip requirement %q not found in the wheelhouse or index", m[1])
	}, core.ErrInvalid},
	{regexp.MustCompile(`^ERROR: No matching distribution found for (\S+)`), func(m []string) string {
		return fmt.Sprintf("pip requirement %q not found in the wheelhouse or index", m[1])
	}, core.ErrInvalid},
	{regexp.MustCompile(`^ERROR: (\S+\.whl) is not a supported wheel on this platform`), func(m []string) string {
		return fmt.Sprintf("wheel %q does not fit the image's Python or platform", strings.TrimPrefix(m[1], buildDir+"/wheels/"))
	}, core.ErrInvalid},
	{regexp.MustCompile(`^ERROR: Cannot install (.+) because these package versions have conflicting dependencies`), func(m []string) string {
		return fmt.Sprintf("pip: conflicting requirements (%s)", m[1])
	}, core.ErrInvalid},
	{regexp.MustCompile(`^ERROR: (?:Could not install packages due to an OSError|Exception): (.*)`), func(m []string) string { return "pip: " + m[1] }, core.ErrInvalid},
}

// classify names what failed in step from its log lines; exit is the
// script's exit code.
func classify(name, step string, lines []string, exit int64) *environments.BuildError {
	for _, p := range failurePatterns {
		var msgs []string
		for _, l := range lines {
			if m := p.re.FindStringSubmatch(l); m != nil {
				if msg := p.msg(m); !slices.Contains(msgs, msg) {
					msgs = append(msgs, msg)
				}
			}
		}
		if len(msgs) > 0 {
			return &environments.BuildError{Name: name, Step: step, Msg: strings.Join(msgs, "; "), Code: p.code}
		}
	}
	last := ""
	for i := len(lines) - 1; i >= 0 && last == ""; i-- {
		last = strings.TrimSpace(lines[i])
	}
	msg := fmt.Sprintf("exit code %d", exit)
	if last != "" {
		msg += ": " + last
	}
	return &environments.BuildError{Name: name, Step: step, Msg: msg, Code: core.ErrInvalid}
}
