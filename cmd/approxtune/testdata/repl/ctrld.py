"""Ctrl-D at the REPL's prompt after a command must end it: eight times,
each in a new session, through pexpect's pseudo-terminal (whose timing
showed the hang: 6 of 8 runs before the fix; a Go pty harness did not).

usage: ctrld.py BINARY DIR"""
import sys
import time

import pexpect

binary, base = sys.argv[1], sys.argv[2]
prompt = r"approxtune(\x1b\[0m)?> "
failed = 0
for i in range(8):
    p = pexpect.spawn(binary, ["repl", "--dir", "%s/s%d" % (base, i)], encoding="utf-8", timeout=60, dimensions=(50, 200))
    p.expect(prompt)
    p.sendline("reps")
    p.expect(prompt)
    t = time.time()
    p.sendeof()
    try:
        p.expect(pexpect.EOF, timeout=10)
        print("try %d: left in %.1f s" % (i, time.time() - t))
    except pexpect.TIMEOUT:
        print("FAIL: try %d: Ctrl-D after 'reps' did not end the REPL within 10 s" % i)
        failed += 1
        p.terminate(force=True)
sys.exit(1 if failed else 0)
