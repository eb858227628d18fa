package schedslice

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// supported skips the test on a kernel that ignores custom slices (before
// 6.12): the request is accepted there and reads back as the default.
func supported(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Of(0)
	if err != nil {
		t.Skipf("sched_getattr: %v", err)
	}
	want := 300 * time.Microsecond
	if before == want {
		want = 400 * time.Microsecond
	}
	if err := setThread(unix.Gettid(), want); err != nil {
		t.Skipf("sched_setattr: %v", err)
	}
	got, _ := Of(0)
	_ = setThread(unix.Gettid(), before)
	if got != want {
		t.Skipf("this kernel has no custom slices (asked %s, reads %s)", want, got)
	}
}

// TestApplyEveryThreadAndLaterOnes: every thread of the process reads the
// slice asked for, and so does a thread the runtime makes afterwards;
// Apply(0) gives the default back.
func TestApplyEveryThreadAndLaterOnes(t *testing.T) {
	supported(t)
	def, err := Of(0)
	if err != nil {
		t.Fatal(err)
	}
	want := 200 * time.Microsecond
	if def == want {
		t.Fatalf("the default slice is already %s", want)
	}
	n, err := Apply(want)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := Apply(0); err != nil {
			t.Error(err)
		}
		tids, _ := threads()
		for _, tid := range tids {
			if d, err := Of(tid); err == nil && d == want {
				t.Errorf("thread %d still at %s after Apply(0)", tid, d)
			}
		}
	}()
	if n == 0 {
		t.Fatal("no thread set")
	}
	// Threads made after Apply: goroutines locked to threads, all at once,
	// so the runtime must start new ones.
	var wg sync.WaitGroup
	var mu sync.Mutex
	later := map[int]time.Duration{}
	release := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			d, err := Of(0)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			later[unix.Gettid()] = d
			mu.Unlock()
			<-release
		}()
	}
	time.Sleep(50 * time.Millisecond)
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		d, err := Of(tid)
		if err == nil && d != want {
			t.Errorf("thread %d: slice %s, want %s", tid, d, want)
		}
	}
	close(release)
	wg.Wait()
	if len(later) < 8 {
		t.Fatalf("only %d locked threads", len(later))
	}
	for tid, d := range later {
		if d != want {
			t.Errorf("thread %d made after Apply: slice %s, want %s", tid, d, want)
		}
	}
}

// TestApplyKeepsNice: a thread's nice value survives Apply (sched_setattr
// sets nice too: a thread niced down must not be raised, nor the call
// refused for it).
func TestApplyKeepsNice(t *testing.T) {
	supported(t)
	ready, done := make(chan int), make(chan struct{})
	var niceAfter int
	var got time.Duration
	go func() {
		runtime.LockOSThread() // never unlocked: the niced thread ends with the goroutine
		tid := unix.Gettid()
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 7); err != nil {
			t.Errorf("setpriority: %v", err)
		}
		ready <- tid
		<-done
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Errorf("sched_getattr: %v", err)
		} else {
			niceAfter, got = int(a.Nice), time.Duration(a.Runtime)
		}
		done <- struct{}{}
	}()
	<-ready
	if _, err := Apply(500 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = Apply(0) }()
	done <- struct{}{}
	<-done
	if niceAfter != 7 {
		t.Errorf("nice %d after Apply, want 7", niceAfter)
	}
	if got != 500*time.Microsecond {
		t.Errorf("niced thread's slice %s, want 500µs", got)
	}
}

// TestApplyRefusesOutOfRange: the kernel's bounds are checked before any
// thread is touched.
func TestApplyRefusesOutOfRange(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, -time.Millisecond, time.Second} {
		if n, err := Apply(d); err == nil || n != 0 {
			t.Errorf("Apply(%s) = %d, %v; want a refusal", d, n, err)
		}
	}
}
