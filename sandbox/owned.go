package sandbox

import (
	"os"
	"strconv"
	"time"
)

// OwnedLabels returns the labels that make a container this process's for
// every Airlock reaper, for containers Airlock makes outside an Engine
// (an environment's build and check containers): managed, of kind, made
// on this host by this process incarnation and expiring after life. A
// container this process leaves behind (killed mid-build) is removed by
// the next reap on this host once the process is gone, or anywhere once
// it has expired.
func OwnedLabels(kind string, life time.Duration) map[string]string {
	host, _ := os.Hostname()
	l := labels(kind, "", "", newID())
	l["airlock.host"] = host
	l["airlock.pid"] = strconv.Itoa(os.Getpid())
	l[labelProc] = procIdentity(os.Getpid())
	l["airlock.expires"] = strconv.FormatInt(time.Now().Add(life).Unix(), 10)
	return l
}
