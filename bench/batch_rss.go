package main

import (
	"sync"
	"time"
)

// secondSampler reads a process's VmRSS once a second and keeps every
// reading, with its CPU time at the start and the end.
type secondSampler struct {
	pid      int
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	samples  []int64
	cpuStart time.Duration
}

// sampleEverySecond starts sampling pid (one reading at once).
func sampleEverySecond(pid int) *secondSampler {
	s := &secondSampler{pid: pid, stop: make(chan struct{}), samples: []int64{procKB(pid, "VmRSS")}}
	s.cpuStart, _ = procCPU(pid)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				v := procKB(pid, "VmRSS")
				s.mu.Lock()
				s.samples = append(s.samples, v)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// rssSeries is what a secondSampler saw.
type rssSeries struct {
	start, max, end, hwm int64
	n                    int
	cpu                  time.Duration // CPU time over the sampling
}

// finish stops sampling; the end reading is taken now.
func (s *secondSampler) finish() rssSeries {
	close(s.stop)
	s.wg.Wait()
	end := procKB(s.pid, "VmRSS")
	out := rssSeries{start: s.samples[0], end: end, max: end, hwm: procKB(s.pid, "VmHWM"), n: len(s.samples) + 1}
	for _, v := range s.samples {
		out.max = max(out.max, v)
	}
	if c, err := procCPU(s.pid); err == nil {
		out.cpu = c - s.cpuStart
	}
	return out
}
