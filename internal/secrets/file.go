package secrets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Bounds of a secrets file.
const (
	MaxFileBytes  = 1 << 20 // the whole file
	MaxFileValues = 10_000  // values in it
)

// Values are literal secret values read from a secrets file. They never
// print: String, GoString, Format-by-%v, JSON and slog all show only how
// many there are, so a Values can sit in a config struct that is logged.
type Values struct {
	list []string
}

// List returns the values (a copy), for a redactor.
func (v Values) List() []string { return append([]string(nil), v.list...) }

// Len is the number of values.
func (v Values) Len() int { return len(v.list) }

// String shows the count only.
func (v Values) String() string { return fmt.Sprintf("[%d secrets]", len(v.list)) }

// GoString shows the count only.
func (v Values) GoString() string { return v.String() }

// MarshalJSON shows the count only.
func (v Values) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"count":%d}`, len(v.list))), nil
}

// LogValue shows the count only.
func (v Values) LogValue() slog.Value { return slog.IntValue(len(v.list)) }

// ReadFile reads a secrets file: one literal value per line, taken as it
// is (only the line ending is removed); blank lines are skipped. A value
// shorter than MinLiteralLen is refused, since it could not be redacted
// without mangling ordinary output. Errors name the file and the line,
// never a value.
func ReadFile(path string) (Values, error) {
	f, err := os.Open(path)
	if err != nil {
		return Values{}, fmt.Errorf("secrets file: %w", err)
	}
	defer f.Close()
	v, err := read(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Values{}, fmt.Errorf("secrets file %s: %w", path, err)
	}
	return v, nil
}

// read parses the lines of a secrets file.
func read(r io.Reader) (Values, error) {
	var v Values
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxFileBytes+1)
	n, size := 0, 0
	for sc.Scan() {
		n++
		size += len(sc.Bytes()) + 1
		if size > MaxFileBytes {
			return Values{}, fmt.Errorf("larger than %d bytes", MaxFileBytes)
		}
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(line) < MinLiteralLen {
			return Values{}, fmt.Errorf("line %d: a value shorter than %d bytes cannot be redacted without mangling ordinary output", n, MinLiteralLen)
		}
		if len(v.list) == MaxFileValues {
			return Values{}, fmt.Errorf("more than %d values", MaxFileValues)
		}
		v.list = append(v.list, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Values{}, fmt.Errorf("line %d: longer than %d bytes", n+1, MaxFileBytes)
		}
		return Values{}, err
	}
	return v, nil
}
