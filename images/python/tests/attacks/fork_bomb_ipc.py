# A one-shot call (N set before it) that leaves SysV shared memory (attached), a semaphore
# set, a message queue and a POSIX message queue behind, then a fork bomb in a session of
# its own (bash's, or Python's os.fork loop). Prints which IPC objects it made. Used by
# drive.py "ipc" and sandbox/leftover_test.go.
import ctypes, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
key = 0x5a000 + N
shm = libc.shmget(key, 1 << 16, 0o1000 | 0o600)
libc.shmat.restype = ctypes.c_void_p
libc.shmat(shm, None, 0)
made = [shm >= 0, libc.semget(key, 2, 0o1000 | 0o600) >= 0, libc.msgget(key, 0o1000 | 0o600) >= 0,
        libc.mq_open(b"/left%d" % N, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0]
bomb = ["bash", "-c", ":(){ :|:& };:"] if N % 2 else ["python3", "-c", "import os\nwhile True:\n try: os.fork()\n except OSError: pass"]
subprocess.Popen(bomb, start_new_session=True, stderr=subprocess.DEVNULL)
time.sleep(0.3)
print(made)
