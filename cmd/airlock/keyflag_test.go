package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestKeyFlagHelpHidesKey: the help of a command with --key never shows
// AIRLOCK_API_KEY's value as the flag's default (it printed it, a secret
// leak), and the key is still used when --key is absent.
func TestKeyFlagHelpHidesKey(t *testing.T) {
	clearEnv(t)
	const secret = "secret-xyz-0123456789"
	t.Setenv("AIRLOCK_API_KEY", secret)
	for _, args := range [][]string{
		{"session", "list", "--help"},
		{"exec", "--help"},
		{"mcp", "--help"},
		{"batch", "list", "--help"},
	} {
		_, stdout, stderr := airlock(args...)
		all := stdout + stderr
		if strings.Contains(all, secret) {
			t.Errorf("airlock %v: help shows the API key: %q", args, all)
		}
		if !strings.Contains(all, "-key") {
			t.Errorf("airlock %v: help lacks -key: %q", args, all)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var server, key string
	registerServer(fs, &server, &key, "", "to ask")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if key != secret {
		t.Errorf("no --key: key %q, want the env's %q", key, secret)
	}
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	if strings.Contains(b.String(), secret) {
		t.Errorf("defaults show the key: %q", b.String())
	}
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	registerServer(fs2, &server, &key, "", "to ask")
	if err := fs2.Parse([]string{"--key", "given-key"}); err != nil || key != "given-key" {
		t.Errorf("--key given-key: key %q (%v)", key, err)
	}
}
