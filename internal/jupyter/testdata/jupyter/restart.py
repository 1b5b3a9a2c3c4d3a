"""Kernel > Restart in the middle of a sweep: the kernel started again opens
a new session, whose first cell names the sweep the one before left
unfinished and the 'resume ID' that finishes it; that resume runs the
missing runs."""
import re
import time

from common import check, execute, fail, first, outputs, start, stop, types

SWEEP = ("workload synthetic steps=50 count=8 mean_us=4000\n"
         "space grid=1x4,2x2,4x1\n"
         "reps 1\npolicy conditional,eager\ntolerance 0\nevaluate")


def text(msgs):
    """Every text the messages show: streams, results, errors."""
    out = []
    for m in msgs:
        c = m["content"]
        if "text" in c:
            out.append(c["text"])
        if "data" in c:
            out.append(c["data"].get("text/plain", ""))
        if "evalue" in c:
            out.append(c["evalue"])
    return "\n".join(out)


km, kc = start()
try:
    msg_id = kc.execute(SWEEP)
    deadline = time.time() + 90
    while True:
        if time.time() > deadline:
            fail("the sweep never showed a result")
        m = kc.get_iopub_msg(timeout=90)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            fail("the sweep ended before the restart")
        if m["msg_type"] == "update_display_data" and ": 0/" not in m["content"]["data"]["text/plain"].split("\n")[0]:
            break
    km.restart_kernel(now=False)  # Kernel > Restart: a shutdown_request with restart
    kc.wait_for_ready(timeout=60)
    r, outs = execute(kc, "status")
    shown = text(outs)
    print(shown, flush=True)
    check(r["content"]["status"] == "ok", "the first cell after the restart: %s" % r["content"])
    got = re.search(r"the previous session, (\S+) \(started [^)]*\), left sweep 1 \(evaluate synthetic\) unfinished after (\d+) of 6 runs", shown)
    check(got is not None, "the first cell does not name the unfinished sweep:\n%s" % shown)
    sid, done = got.group(1), int(got.group(2))
    check(("'resume %s' runs the %d missing here" % (sid, 6 - done)) in shown, "no resume named:\n%s" % shown)
    r, outs = execute(kc, "resume " + sid, timeout=180)
    shown = text(outs)
    check(r["content"]["status"] == "ok", "resume %s: %s\n%s" % (sid, r["content"], shown))
    check("6 of 6 runs (ok)" in shown, "resume did not finish the sweep:\n%s" % shown)
    r, outs = execute(kc, "status")
    check("the previous session" not in text(outs), "the note came again in a later cell")
finally:
    stop(km, kc)
print("OK", flush=True)
