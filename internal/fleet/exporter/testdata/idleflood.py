#!/usr/bin/env python3
# idleflood.py N PORT PID HOLD: open N keep-alive connections to 127.0.0.1:PORT,
# send one GET /metrics on each, hold them HOLD seconds, print the server's VmRSS.
import socket, sys, time, select
n, port, pid, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def rss():
    d = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status"))
    return d["VmRSS"].strip(), d["VmHWM"].strip(), len(__import__("os").listdir(f"/proc/{pid}/fd"))
print("before: VmRSS %s VmHWM %s fds %d" % rss())
socks, fails = [], 0
t0 = time.time()
for i in range(n):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    except OSError: fails += 1; s.close(); continue
    socks.append(s)
time.sleep(1)
sent = 0
for s in socks:
    try: s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); sent += 1
    except OSError: pass
time.sleep(hold)
print("%d connections, %d requests sent, %d connect errors, after %.1fs: VmRSS %s VmHWM %s fds %d" % ((len(socks), sent, fails, time.time()-t0) + rss()))
for s in socks: s.close()
