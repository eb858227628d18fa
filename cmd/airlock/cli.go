package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/airlock-dev/airlock/client"
)

// command is one subcommand's name and output, for its messages.
type command struct {
	name   string
	stderr io.Writer
}

// fail prints "airlock NAME: err" to stderr and returns code, the exit
// code the command ends with.
func (c command) fail(code int, err error) int {
	fmt.Fprintf(c.stderr, "airlock %s: %v\n", c.name, err)
	return code
}

// failf is fail with a formatted message.
func (c command) failf(code int, format string, a ...any) int {
	return c.fail(code, fmt.Errorf(format, a...))
}

// failAPI prints a failed request to a server: exit 75 (EX_TEMPFAIL) when
// the server asked to retry later (saying when, if it did), else 1.
func (c command) failAPI(err error) int {
	c.fail(1, err)
	var ae *client.APIError
	if !errors.As(err, &ae) || !ae.Temporary() {
		return 1
	}
	if ae.RetryAfter > 0 {
		fmt.Fprintf(c.stderr, "airlock %s: the server asks to retry after %s\n", c.name, ae.RetryAfter)
	}
	return 75
}

// envOr returns the environment variable k, or def when it is empty.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// envInt returns the environment variable k as an integer, or def.
func envInt(k string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(k), &n); err == nil {
		return n
	}
	return def
}

// envDuration returns the environment variable k as a duration, or def.
func envDuration(k string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return d
	}
	return def
}

// logger logs text to stderr: warnings, or everything when verbose.
func logger(stderr io.Writer, verbose bool) *slog.Logger {
	lvl := slog.LevelWarn
	if verbose {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
}

// infoLogger logs at info level as text to stderr (debug when verbose):
// the logger of the long-running commands.
func infoLogger(stderr io.Writer, verbose bool) *slog.Logger {
	if verbose {
		return logger(stderr, true)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
