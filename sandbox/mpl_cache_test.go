package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// firstPyplot is a fresh container's first matplotlib use, with
// matplotlib's font_manager log on stderr: it says whether the font cache
// was read or rebuilt (FontManager(), >10 s under load). It prints the time
// it took and whether each cache file in MPLCONFIGDIR is the image's.
const firstPyplot = `import glob, logging, os, sys, time
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
t = time.monotonic()
import matplotlib.pyplot as plt
plt.plot([1]); plt.savefig('/tmp/x.png')
el = time.monotonic() - t
same = lambda p: open(p, 'rb').read() == open('/usr/local/share/airlock/mpl/' + os.path.basename(p), 'rb').read()
print('%.2f' % el, ' '.join('image' if same(p) else 'other:' + p for p in glob.glob('/tmp/.mpl/fontlist-*.json')))
`

// TestFirstPyplotUsesImageFontCache: a cold container's kernel is not
// preloaded (AIRLOCK_PRELOAD=0), so its first import of pyplot loads
// matplotlib's font cache; it must come from the image (built by
// images/build.sh, copied into the empty /tmp/.mpl by the controller), not
// be rebuilt. Twice: the one-shot cleanup empties /tmp, the link is made
// again.
func TestFirstPyplotUsesImageFontCache(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := newTestEngine(t, func(c *Config) { c.SingleUse = true })
	for i := 0; i < 2; i++ {
		r := run(t, e, core.Request{Owner: "o", Language: core.Python, Code: firstPyplot})
		if r.Status != core.StatusOK {
			t.Fatalf("first pyplot: %s", brief(r))
		}
		t.Logf("first pyplot in a fresh container: %s s", strings.Fields(r.Stdout)[0])
		if strings.Contains(r.Stderr, "generated new fontManager") || !strings.Contains(r.Stderr, "Using fontManager instance from /tmp/.mpl/fontlist-") {
			t.Errorf("the font cache was rebuilt, not read: %s", brief(r))
		}
		if f := strings.Fields(r.Stdout); len(f) != 2 || f[1] != "image" {
			t.Errorf("MPLCONFIGDIR's font cache is not the image's: %q", r.Stdout)
		}
	}
}

// TestOneShotFontCacheRestored: the controller reads the image's font cache
// once at start and writes it back into /tmp/.mpl after every one-shot
// call; a call that overwrites it, removes it or plants a file beside it
// leaves nothing of that to the owner's next call in the same warm
// container, which finds exactly the image's file again.
func TestOneShotFontCacheRestored(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := pooledEngine(t, nil)
	const check = `import glob, os
ps = sorted(glob.glob('/tmp/.mpl/*'))
print(len(ps), all(open(p, 'rb').read() == open('/usr/local/share/airlock/mpl/' + os.path.basename(p), 'rb').read() for p in ps))`
	const tamper = `import glob, os
for p in glob.glob('/tmp/.mpl/fontlist-*.json'):
    open(p, 'w').write('{"tampered": %d}' % N)
open('/tmp/.mpl/planted', 'w').write('x')
if N % 2:
    for p in glob.glob('/tmp/.mpl/fontlist-*.json'):
        os.unlink(p)
print('ok')`
	warmPairs(t, e, 4, func(i int) core.Request {
		return core.Request{Owner: "mpl", Language: core.Python, Code: fmt.Sprintf("N = %d\n%s", i, tamper)}
	}, "ok\n", core.Request{Owner: "mpl", Language: core.Python, Code: check}, "1 True\n",
		"the next call does not find exactly the image's font cache")
}
