package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// runImages implements `airlock images build|list` by running images/build.sh.
func runImages(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "build" && args[0] != "list") {
		fmt.Fprintln(stderr, "usage: airlock images build [NAME...] | airlock images list")
		return 2
	}
	script, err := buildScript()
	if err != nil {
		fmt.Fprintf(stderr, "airlock images: %v\n", err)
		return 1
	}
	cmdArgs := args[1:]
	if args[0] == "list" {
		cmdArgs = []string{"--list"}
	}
	cmd := exec.Command("bash", append([]string{script}, cmdArgs...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "airlock images: %v\n", err)
		return 1
	}
	return 0
}

// buildScript finds images/build.sh: $AIRLOCK_IMAGES_DIR, or images/ in the
// current folder or beside the executable.
func buildScript() (string, error) {
	var dirs []string
	if d := os.Getenv("AIRLOCK_IMAGES_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "images")
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "images"), filepath.Join(filepath.Dir(exe), "..", "images"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "build.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("images/build.sh not found (run from the repository or set AIRLOCK_IMAGES_DIR)")
}

// runReap implements `airlock reap`.
func runReap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	sf.register(fs, 0)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	eng, err := sf.engine(logger(stderr, false))
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := eng.Reap(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %d leftover containers\n", n)
	return 0
}
