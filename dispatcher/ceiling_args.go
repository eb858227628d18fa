package dispatcher

import (
	"encoding/json"
	"fmt"
)

// timeoutPastSchema refuses a numeric timeout_seconds over the schemas'
// maximum (Config.MaxTimeout) as over the ceiling, like any other value
// past the call's ceiling, instead of as a schema violation: the ceiling
// is never above the maximum, so the caller learns the one number that
// matters (`timeout_seconds 301 is over 10`) with the same 400 either way.
// Anything that is not a number is left to the schema.
func (d *Dispatcher) timeoutPastSchema(rt *registered, call Call, raw map[string]any) *Result {
	if _, declared := properties(rt.Parameters)["timeout_seconds"]; !declared {
		return nil
	}
	var asked float64
	switch v := raw["timeout_seconds"].(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return nil
		}
		asked = f
	case float64:
		asked = v
	default:
		return nil
	}
	if asked <= d.cfg.MaxTimeout.Seconds() {
		return nil
	}
	ceiling := overLimits(d.cfg.Ceiling, call.Ceiling).Timeout
	if ceiling <= 0 || ceiling > d.cfg.MaxTimeout {
		ceiling = d.cfg.MaxTimeout
	}
	return ceilingRefusal([]string{fmt.Sprintf("timeout_seconds %g is over %g", asked, ceiling.Seconds())})
}
