package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-dev/airlock/core"
)

// maxInputWalk bounds how many entries of an input folder are checked for
// readability before a container starts; entries past it are not checked.
const maxInputWalk = 10000

// inputIdentity decides who may read an input folder in the sandbox. A
// zero identity means the folder is readable by anyone, so the container
// runs as its own uid from the engine's range. Otherwise the folder is
// private and owned by a non-root user whose uid:gid can read the whole
// (checked) tree: the container runs as that owner (such containers are
// always started cold, as mounts never use warm ones). When neither can
// read it the call is refused with core.ErrInvalid naming the first
// unreadable path relative to the folder and what to change — never a
// silent empty view. Messages never contain the folder's host path.
func inputIdentity(dir string) (identity, error) {
	if dir == "" {
		return identity{}, nil
	}
	rel, err := firstUnreadable(dir, nil)
	if err != nil {
		return identity{}, err
	}
	if rel == "" {
		return identity{}, nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return identity{}, core.Errorf("", core.ErrInvalid, "the input folder cannot be examined: "+errnoText(err))
	}
	if st.Uid == 0 {
		return identity{}, core.Errorf("", core.ErrInvalid, fmt.Sprintf(
			"the input folder is readable only by root (%s is not readable by others): make it readable (chmod -R a+rX) or owned by a non-root user",
			describeRel(rel)))
	}
	owner := identity{UID: int(st.Uid), GID: int(st.Gid)}
	if owner.GID == 0 {
		owner.GID = owner.UID // never run in the root group
	}
	rel, err = firstUnreadable(dir, &owner)
	if err != nil {
		return identity{}, err
	}
	if rel != "" {
		return identity{}, core.Errorf("", core.ErrInvalid, fmt.Sprintf(
			"%s in the input folder is readable neither by others nor by the folder's owner (uid %d), whom the sandbox runs as for a private folder: make it readable by that owner or by all (chmod -R a+rX)",
			describeRel(rel), owner.UID))
	}
	return owner, nil
}

// firstUnreadable walks at most maxInputWalk entries of dir and returns the
// first one (relative to dir, "." for dir itself) that who cannot read — a
// directory needs r and x, a file r — or "" when all can be read. who nil
// means a uid that owns nothing and is in no group: only the "other" bits
// count. Symlinks are skipped (they resolve inside the container), as are
// folders on another filesystem (the non-recursive bind shows them empty).
func firstUnreadable(dir string, who *identity) (string, error) {
	var root syscall.Stat_t
	if err := syscall.Stat(dir, &root); err != nil {
		return "", core.Errorf("", core.ErrInvalid, "the input folder cannot be examined: "+errnoText(err))
	}
	seen, bad := 0, ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen++
		if seen > maxInputWalk {
			return fs.SkipAll
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		var need uint32
		switch {
		case info.IsDir():
			if st.Dev != root.Dev {
				return fs.SkipDir
			}
			need = 5 // r-x
		case info.Mode().IsRegular():
			need = 4 // r--
		default:
			return nil
		}
		if !mayAccess(st, who, need) {
			bad, _ = filepath.Rel(dir, p)
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", core.Errorf("", core.ErrInvalid, "the input folder cannot be examined: "+errnoText(err))
	}
	return bad, nil
}

// mayAccess applies the classic owner/group/other permission check.
func mayAccess(st *syscall.Stat_t, who *identity, need uint32) bool {
	perm := st.Mode & 0o777
	bits := perm & 7
	switch {
	case who != nil && int(st.Uid) == who.UID:
		bits = perm >> 6 & 7
	case who != nil && int(st.Gid) == who.GID:
		bits = perm >> 3 & 7
	}
	return bits&need == need
}

// describeRel names an entry of the input folder for a message.
func describeRel(rel string) string {
	if rel == "." {
		return "the folder itself"
	}
	return fmt.Sprintf("%q", rel)
}

// errnoText describes a file-system error without the path it carries.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return err.Error()
}
