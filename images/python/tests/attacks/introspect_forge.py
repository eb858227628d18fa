# After introspect_thief.py and an introspection: send a done for this call carrying every
# token stolen during the question, through the control socket the display builtin writes
# to, then exit 7. The call must still report exit 7 (a question's token is its own).
g = display.__globals__
for tok in STOLEN:
    g["_wire"].send(g["_sock"], {"t": "done", "seq": g["_seq"], "token": tok, "status": "ok", "exit_code": 0,
                                 "error": None})
print("forged")
raise SystemExit(7)
