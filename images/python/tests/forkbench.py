"""Where a kernel's fork-to-ready time goes (manual check, issue 33): a zygote like
zygote.py (kernel.preload(), gc.freeze()) forks N children that do what
kernel.child_main does and time each step, their CPU and page faults.

    docker run --rm --network none --user 10001 --memory 256m --cpus 1 \
      -e PYTHONPATH=/opt/airlock -e MPLCONFIGDIR=/tmp/.mpl \
      -v $PWD/images/python/tests:/b:ro airlock/python python3 /b/forkbench.py [full|bare]

Knobs: N (forks, 20), FREEZE=0 (no gc.freeze), SMAPS=1 (the child's private dirty
kB per mapping at ready), THP=1 (MADV_COLLAPSE of the zygote's anonymous memory),
STEPS=nowarm (no warm-up). "fork_parent" is os.fork in the zygote, "to_child" the
fork's start to the child's first line; cpu_*/flt_* are the child's CPU and minor
faults at its first line and when ready.
"""
import gc, os, sys, time, json, socket, resource
P = time.perf_counter
mode = sys.argv[1] if len(sys.argv) > 1 else "full"   # full | bare
freeze = os.environ.get("FREEZE", "1") == "1"
N = int(os.environ.get("N", "20"))

def status(pid="self"):
    d = {}
    for line in open("/proc/%s/status" % pid):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "VmPTE", "VmSize"):
            d[k] = v.strip()
    return d

t = P()
import kernel
if mode == "full":
    kernel.preload()
print("preload %.0f ms" % ((P() - t) * 1000))
gc.collect()
if freeze:
    gc.freeze()
if os.environ.get("THP") == "1":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    t = P(); ok = bad = 0
    for line in open("/proc/self/maps"):
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        name = parts[5] if len(parts) > 5 else ""
        if parts[1].startswith("rw") and name in ("", "[heap]") and hi - lo >= 2 << 20:
            a = (lo + (2 << 20) - 1) & ~((2 << 20) - 1); b = hi & ~((2 << 20) - 1)
            if b > a:
                libc.madvise(a, b - a, 14)
                r = libc.madvise(a, b - a, int(os.environ.get("THP_ADV", "25")))
                if r == 0: ok += 1
                else: bad += 1; err = ctypes.get_errno()
    print("collapse %.0f ms ok %d bad %d %s" % ((P() - t) * 1000, ok, bad, os.strerror(err) if bad else ""))
print("zygote", status())
try:
    print("smaps_rollup", {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/smaps_rollup') if 'Huge' in l or 'Anon' in l})
except OSError:
    pass

def child(w, ctl, steps):
    tt = [("forked", P())]
    import resource
    cpu0 = time.thread_time(); flt0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    def m(n): tt.append((n, P()))
    import signal
    os.setsid(); m("setsid")
    lo, hi = sorted((ctl, w)); os.closerange(3, lo); os.closerange(lo + 1, hi); os.closerange(hi + 1, 1 << 16); m("closerange")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null); m("devnull")
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN); signal.signal(signal.SIGINT, signal.SIG_IGN); m("signals")
    sock = socket.socket(fileno=ctl)
    for name in kernel._OUR_MODULES:
        pass
    for s in (sys.stdout, sys.stderr):
        try: s.reconfigure(line_buffering=True)
        except Exception: pass
    m("sock")
    k = kernel.Kernel(sock)
    kernel.rich.install(k.ns, sock); k.own = dict(k.ns); m("install")
    if steps != "nowarm":
        k.warm_up(); m("warm_up")
    st = status()
    if os.environ.get("SMAPS") == "1":
        agg = {}; name = None
        for line in open("/proc/self/smaps"):
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else "[anon]"
                name = name.rsplit("/", 1)[-1]
            elif parts[0] == "Private_Dirty:":
                agg[name] = agg.get(name, 0) + int(parts[1])
        st["dirty"] = sorted(((v, k) for k, v in agg.items() if v), reverse=True)[:15]
    ru = resource.getrusage(resource.RUSAGE_SELF)
    st["cpu_at_first_ms"] = round(cpu0 * 1000, 2); st["cpu_ready_ms"] = round(time.thread_time() * 1000, 2)
    st["flt_at_first"] = flt0; st["flt_ready"] = ru.ru_minflt
    os.write(w, json.dumps({"t": tt, "rss": st}).encode())
    os._exit(0)

res = []
for i in range(N):
    r, w = os.pipe()
    a, b = socket.socketpair()
    t0 = P()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(w, b.fileno(), os.environ.get("STEPS", ""))
    t1 = P()
    os.close(w); b.close()
    data = b""
    while True:
        x = os.read(r, 65536)
        if not x: break
        data += x
    os.close(r)
    t2 = P()
    os.waitpid(pid, 0)
    t3 = P()
    a.close()
    d = json.loads(data)
    row = {"fork_parent": t1 - t0, "to_child": d["t"][0][1] - t0}
    prev = d["t"][0][1]
    for n, tv in d["t"][1:]:
        row[n] = tv - prev; prev = tv
    row["ready_total"] = prev - t0
    row["exit_wait"] = t3 - t2
    row["rss"] = d["rss"]
    res.append(row)
    time.sleep(0.05)

keys = [k for k in res[0] if k != "rss"]
import statistics
for k in keys:
    v = sorted(x[k] * 1000 for x in res)
    print("%-12s p50 %7.2f  min %7.2f  max %7.2f ms" % (k, statistics.median(v), v[0], v[-1]))
print("child at ready", res[-1]["rss"])
if "dirty" in res[-1]["rss"]: print("dirty kB", res[-1]["rss"]["dirty"])
for kk in ("cpu_at_first_ms", "cpu_ready_ms", "flt_at_first", "flt_ready"):
    print(kk, "p50", statistics.median(x["rss"][kk] for x in res))
