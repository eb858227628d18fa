package redisinfo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Commands is INFO commandstats summed: commands run and their µs, in all
// and per command. The INFO and CONFIG RESETSTAT calls of the measurement
// itself are left out.
type Commands struct {
	Calls, Usec  int64
	Per, PerUsec map[string]int64
}

// CommandStats reads INFO commandstats from rdb.
func CommandStats(ctx context.Context, rdb redis.UniversalClient) (Commands, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return Commands{}, fmt.Errorf("redisinfo: commandstats: %w", err)
	}
	c := Commands{Per: map[string]int64{}, PerUsec: map[string]int64{}}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "config|resetstat" {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				c.Calls += n
				c.Per[name] = n
			case "usec":
				c.Usec += n
				c.PerUsec[name] = n
			}
		}
	}
	return c, nil
}

// CPU reads the Redis process's CPU time (user + system) in µs.
func CPU(ctx context.Context, rdb redis.UniversalClient) (float64, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("redisinfo: cpu: %w", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f * 1e6
		}
	}
	return total, nil
}
