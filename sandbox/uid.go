package sandbox

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/airlock-dev/airlock/core"
)

// IDRange is an inclusive range of numeric user ids.
type IDRange struct {
	First, Last int
}

// DefaultUIDRange is where sandbox uids come from when Config.UIDRange is
// zero: 10,000 ids, far more than one host can run containers at once. It
// lies outside Debian's login.defs ranges for regular users (UID_MIN..UID_MAX,
// 1000–60000) and subordinate ids (SUB_UID_MIN 100000 and up, used by
// rootless containers and userns-remap), and away from nobody (65534), so a
// sandbox shares per-uid kernel limits with no host account.
var DefaultUIDRange = IDRange{First: 70000, Last: 79999}

// Validate refuses a range that is empty, includes root or does not fit a
// 32-bit uid.
func (r IDRange) Validate() error {
	switch {
	case r.First <= 0:
		return fmt.Errorf("uid range %d-%d: the first uid must be above 0 (root)", r.First, r.Last)
	case r.Last < r.First:
		return fmt.Errorf("uid range %d-%d is empty", r.First, r.Last)
	case r.Last >= 1<<31-1:
		return fmt.Errorf("uid range %d-%d: the last uid must be below 2147483647", r.First, r.Last)
	}
	return nil
}

// contains reports whether uid is in the range.
func (r IDRange) contains(uid int) bool { return uid >= r.First && uid <= r.Last }

// uidAllocator hands every live container of one engine its own uid from a
// range, so per-uid kernel limits (inotify instances, nproc, keyrings) are
// never shared between two sandboxes. A uid is free again once its
// container has been removed.
type uidAllocator struct {
	r     IDRange
	err   error // the range is invalid: every take fails
	mu    sync.Mutex
	used  map[int]string // uid -> container id ("" while being created)
	byCtr map[string]int // container id -> uid
	next  int
}

// newUIDAllocator starts handing out uids at a random point of r, so that
// several engines given the same range (workers on one host should get
// disjoint ones) rarely meet.
func newUIDAllocator(r IDRange) *uidAllocator {
	a := &uidAllocator{r: r, err: r.Validate(), used: map[int]string{}, byCtr: map[string]int{}, next: r.First}
	if a.err == nil {
		a.next = r.First + rand.IntN(r.Last-r.First+1)
	}
	return a
}

// take reserves a uid no live container of this engine has.
func (a *uidAllocator) take() (int, error) {
	if a.err != nil {
		return 0, fmt.Errorf("sandbox: %w: %w", core.ErrUnavailable, a.err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.r.Last - a.r.First + 1
	for i := 0; i < n; i++ {
		uid := a.next
		a.next++
		if a.next > a.r.Last {
			a.next = a.r.First
		}
		if _, busy := a.used[uid]; !busy {
			a.used[uid] = ""
			return uid, nil
		}
	}
	return 0, fmt.Errorf("sandbox: all %d sandbox uids (%d-%d) are in use: %w", n, a.r.First, a.r.Last, core.ErrBusy)
}

// bind records which container runs as a reserved uid.
func (a *uidAllocator) bind(uid int, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.used[uid]; ok {
		a.used[uid] = id
		a.byCtr[id] = uid
	}
}

// release frees a reserved uid that no container got.
func (a *uidAllocator) release(uid int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used[uid] == "" {
		delete(a.used, uid)
	}
}

// removed frees the uid of a container that no longer exists.
func (a *uidAllocator) removed(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uid, ok := a.byCtr[id]; ok {
		delete(a.byCtr, id)
		delete(a.used, uid)
	}
}

// inUse is how many uids are reserved (for tests and metrics).
func (a *uidAllocator) inUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.used)
}

// identity is the uid:gid a container runs as.
type identity struct {
	UID, GID int
}

// user is the Docker User string.
func (id identity) user() string { return strconv.Itoa(id.UID) + ":" + strconv.Itoa(id.GID) }
