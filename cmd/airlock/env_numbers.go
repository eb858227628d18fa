package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"
)

// flagEnv finds the variable a flag's usage names ("env AIRLOCK_X").
var flagEnv = regexp.MustCompile(`env (AIRLOCK_[A-Z0-9_]+)`)

// checkNumberEnv returns an error naming the variable and its value when
// the AIRLOCK_* variable of a duration, number or boolean flag of fs that
// the command line did not set does not parse: envDuration, envInt and
// envBool would otherwise fall back to the default without a word.
func checkNumberEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		m := flagEnv.FindStringSubmatch(f.Usage)
		g, ok := f.Value.(flag.Getter)
		if err != nil || given[f.Name] || m == nil || !ok {
			return
		}
		v, set := os.LookupEnv(m[1])
		if !set || v == "" {
			return
		}
		var perr error
		switch g.Get().(type) {
		case bool:
			_, perr = strconv.ParseBool(v)
		case time.Duration:
			_, perr = time.ParseDuration(v)
		case int, int64:
			_, perr = strconv.ParseInt(v, 10, 64)
		case uint, uint64:
			_, perr = strconv.ParseUint(v, 10, 64)
		case float64:
			_, perr = strconv.ParseFloat(v, 64)
		}
		if perr != nil {
			err = fmt.Errorf("%s=%q (the default of --%s) is not valid: %w", m[1], v, f.Name, perr)
		}
	})
	return err
}

// envBool returns the environment variable k as a boolean (1, t, true,
// 0, f, false... as strconv.ParseBool reads them), or def.
func envBool(k string, def bool) bool {
	if b, err := strconv.ParseBool(os.Getenv(k)); err == nil {
		return b
	}
	return def
}
