package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// imagesUsage is the usage line of `airlock images`.
const imagesUsage = "usage: airlock images build [NAME...] | airlock images list"

// runImages implements `airlock images build|list` by running images/build.sh.
func runImages(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprintln(stdout, imagesUsage)
		return 0
	case len(args) > 0 && strings.HasPrefix(args[0], "-"):
		fmt.Fprintf(stderr, "airlock images: flag provided but not defined: %s\n%s\n", args[0], imagesUsage)
		return 2
	case len(args) == 0 || (args[0] != "build" && args[0] != "list"):
		fmt.Fprintln(stderr, imagesUsage)
		return 2
	}
	cmd := command{"images", stderr}
	script, err := buildScript()
	if err != nil {
		return cmd.fail(1, err)
	}
	cmdArgs := args[1:]
	if args[0] == "list" {
		cmdArgs = []string{"--list"}
	}
	build := exec.Command("bash", append([]string{script}, cmdArgs...)...)
	build.Stdout, build.Stderr = stdout, stderr
	if err := build.Run(); err != nil {
		return cmd.fail(1, err)
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
