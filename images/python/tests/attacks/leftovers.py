# The call after fork_bomb_ipc.py: prints the SysV IPC objects, POSIX message queues and
# processes it sees besides itself, the controller and the zygote's ("0 0 []": none).
import os
ipc = sum(len(open("/proc/sysvipc/" + k).read().splitlines()) - 1 for k in ("shm", "sem", "msg"))
others = []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) in (1, os.getpid()):
        continue
    try:
        cmd = open("/proc/%s/cmdline" % p, "rb").read()
    except OSError:
        continue
    if b"zygote.py" not in cmd:
        others.append(cmd[:30])
print(ipc, len(os.listdir("/dev/mqueue")), others)
