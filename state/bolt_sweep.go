package state

import (
	"bytes"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sweepBatch bounds the entries one sweep transaction deletes, so the
// sweeper never holds the write lock long.
const sweepBatch = 1000

func (b *Bolt) sweepLoop(every time.Duration) {
	defer b.sweeper.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
			_, _ = b.Sweep()
		}
	}
}

// Sweep deletes from disk every record, log and counter whose expiry has
// passed and returns how many it deleted. Expired entries are invisible
// without it; the background sweeper calls it every SweepEvery.
func (b *Bolt) Sweep() (int, error) {
	total := 0
	for {
		n, err := b.sweepOnce(time.Now())
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}

func (b *Bolt) sweepOnce(now time.Time) (int, error) {
	if err := b.isClosed("sweep"); err != nil {
		return 0, err
	}
	n := 0
	err := b.update("sweep", 0, func(tx *bolt.Tx) error {
		n = 0 // counted again if the committer reruns this
		idx := tx.Bucket(bExp)
		limit := be64(now.UnixNano())
		var due [][]byte
		c := idx.Cursor()
		for key, _ := c.First(); key != nil && len(due) < sweepBatch; key, _ = c.Next() {
			if len(key) < 9 || bytes.Compare(key[:8], limit) > 0 {
				break
			}
			due = append(due, append([]byte(nil), key...))
		}
		for _, key := range due {
			exp, typ, ek := unbe64(key[:8]), key[8], key[9:]
			if err := idx.Delete(key); err != nil {
				return err
			}
			var err error
			switch typ {
			case expRecord:
				recs := tx.Bucket(bRecords)
				if rawExpires(recs.Get(ek)) == exp {
					err = recs.Delete(ek)
				}
			case expCounter:
				ctrs := tx.Bucket(bCounters)
				if raw := ctrs.Get(ek); len(raw) == 16 && unbe64(raw[8:]) == exp {
					err = ctrs.Delete(ek)
				}
			case expLog:
				if m, ok := decLogMeta(tx.Bucket(bLogMeta).Get(ek)); ok && m.expires == exp {
					err = deleteLog(tx, ek)
				}
			}
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
