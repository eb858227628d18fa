package state

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// encPrefix encodes kind and owner, length-prefixed so no kind or owner
// can run into another; the id follows it raw, so keys of one kind and
// owner sort by id.
func encPrefix(kind, owner string) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(kind)+len(owner))
	b = binary.AppendUvarint(b, uint64(len(kind)))
	b = append(b, kind...)
	b = binary.AppendUvarint(b, uint64(len(owner)))
	return append(b, owner...)
}

// encKey is the Bolt key of k.
func encKey(k Key) []byte { return append(encPrefix(k.Kind, k.Owner), k.ID...) }

func hasPrefix(b, prefix []byte) bool { return bytes.HasPrefix(b, prefix) }

func be64(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func unbe64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// expiryNano is the Unix-nanosecond expiry of a write now with ttl; 0 is
// never.
func expiryNano(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return now.Add(ttl).UnixNano()
}

// boltRecord is a decoded record value: version (8 bytes), expiry in Unix
// nanoseconds (8 bytes, 0 never), then the value.
type boltRecord struct {
	version int64
	expires int64
	value   []byte
}

func encRecord(version, expires int64, value []byte) []byte {
	b := make([]byte, 16+len(value))
	binary.BigEndian.PutUint64(b, uint64(version))
	binary.BigEndian.PutUint64(b[8:], uint64(expires))
	copy(b[16:], value)
	return b
}

func rawExpires(raw []byte) int64 {
	if len(raw) < 16 {
		return 0
	}
	return unbe64(raw[8:16])
}

// decRecord decodes raw; ok is false when it is missing or expired at now.
// The value aliases raw (valid only inside the transaction).
func decRecord(raw []byte, now time.Time) (boltRecord, bool) {
	if len(raw) < 16 {
		return boltRecord{}, false
	}
	r := boltRecord{version: unbe64(raw[:8]), expires: unbe64(raw[8:16]), value: raw[16:]}
	if r.expires != 0 && now.UnixNano() >= r.expires {
		return boltRecord{}, false
	}
	return r, true
}

// item copies r out of the transaction.
func (r boltRecord) item(k Key) Item {
	it := Item{Key: k, Value: append([]byte{}, r.value...), Version: r.version}
	if r.expires != 0 {
		it.Expires = time.Unix(0, r.expires)
	}
	return it
}

// logMeta is a log's bounds: its first and last live seq and its expiry.
type logMeta struct {
	first, last, expires int64
}

func (m logMeta) enc() []byte {
	return append(append(be64(m.first), be64(m.last)...), be64(m.expires)...)
}

func decLogMeta(raw []byte) (logMeta, bool) {
	if len(raw) != 24 {
		return logMeta{}, false
	}
	return logMeta{first: unbe64(raw[:8]), last: unbe64(raw[8:16]), expires: unbe64(raw[16:])}, true
}

// expKey is the expiry index key: expiry (8 bytes, big-endian, so the
// index sorts by time), type, encoded key.
func expKey(typ byte, ek []byte, expires int64) []byte {
	b := make([]byte, 0, 9+len(ek))
	b = append(b, be64(expires)...)
	b = append(b, typ)
	return append(b, ek...)
}

func addExp(tx *bolt.Tx, typ byte, ek []byte, expires int64) error {
	if expires == 0 {
		return nil
	}
	return tx.Bucket(bExp).Put(expKey(typ, ek, expires), nil)
}

func dropExp(tx *bolt.Tx, typ byte, ek []byte, expires int64) error {
	if expires == 0 {
		return nil
	}
	return tx.Bucket(bExp).Delete(expKey(typ, ek, expires))
}
