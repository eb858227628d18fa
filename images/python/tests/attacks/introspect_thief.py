# A session call that replaces what answers the session's introspections (Jedi, which user
# code may import and patch) with a thief: while the kernel answers a completion it walks
# the kernel's frames for anything shaped like a token (32 hex digits) into STOLEN, starts a
# process in a session of its own (sleep 4322) and leaves a thread spinning. Used by
# drive.py "jupyter" and sandbox/kernel_ops_forgery_test.go with introspect_forge.py: a
# stolen token must not make a later call's forged done count, the process must not
# survive the question, and the spinning thread must not run once the question is answered.
import re, subprocess, sys, threading
import jedi
STOLEN = []
def spin():
    while True:
        pass
class Thief:
    def __init__(self, *a, **k):
        f = sys._getframe(1)
        while f is not None:
            for v in list(f.f_locals.values()):
                if isinstance(v, str) and re.fullmatch("[0-9a-f]{32}", v):
                    STOLEN.append(v)
            f = f.f_back
        subprocess.Popen(["sleep", "4322"], start_new_session=True)
        threading.Thread(target=spin, daemon=True).start()
    def complete(self, *a, **k):
        return []
jedi.Interpreter = Thief
print("armed")
