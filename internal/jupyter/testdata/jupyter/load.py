"""Load through the kernel (cmd/approxtune's TestLoadKernel asserts on what
this measures): a sweep of many tiny runs in one cell, then the tables and
figures of its result, then many small cells, each a round trip.

Environment: APPROXTUNE_LOAD_SETUP, the cell that sets the sweep up;
APPROXTUNE_LOAD_CELLS, how many small cells follow; APPROXTUNE_LOAD_OUT, the
file the figures go to as JSON. It prints OK when every cell succeeded.
"""
import json
import os
import re
import time

from common import check, fail, reply, start, stop

RUNS = re.compile(r"(\d+)/(\d+) runs")


def status_kb(pid, field):
    """A field of /proc/PID/status in kB (VmRSS, VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    fail("no %s in /proc/%d/status" % (field, pid))


def cpu_s(pid):
    """The processor time (user and system) process pid has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_cell(kc, code, timeout):
    """Execute code and wait for its reply and its status idle; returns the
    reply, the iopub messages with the time each was received, and the
    round trip (from the request to the idle status) in seconds."""
    t0 = time.monotonic()
    msg_id = kc.execute(code)
    got = []
    deadline = t0 + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            fail("%r: no status idle within %ss" % (code, timeout))
        try:
            m = kc.get_iopub_msg(timeout=left)
        except Exception:
            continue
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        got.append((time.monotonic(), m))
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    rt = time.monotonic() - t0
    r = reply(kc, msg_id, timeout)
    if r["content"]["status"] != "ok":
        fail("%r: %s" % (code, r["content"]))
    return r, got, rt


def main():
    setup = os.environ["APPROXTUNE_LOAD_SETUP"]
    ncells = int(os.environ["APPROXTUNE_LOAD_CELLS"])
    out = {}
    km, kc = start()
    try:
        pid = km.provisioner.process.pid
        run_cell(kc, setup, 60)
        out["rss_before_kb"] = status_kb(pid, "VmRSS")

        # The sweep: every display message, with the runs it shows done, the
        # kernel's resident memory then, and whether its figures changed.
        t0 = time.monotonic()
        msg_id = kc.execute("evaluate")
        updates, figs, rss, last_png = [], [], [], None
        total = 0
        while True:
            try:
                m = kc.get_iopub_msg(timeout=300)
            except Exception:
                fail("no message from the sweep's cell for 300 s")
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            typ = m["msg_type"]
            if typ == "status" and m["content"]["execution_state"] == "idle":
                break
            if typ not in ("display_data", "update_display_data"):
                continue
            at = time.monotonic() - t0
            data = m["content"]["data"]
            match = RUNS.search(data["text/plain"])
            if not match:
                continue
            done, total = int(match.group(1)), int(match.group(2))
            if typ == "update_display_data":
                updates.append(at)
            png = data.get("image/png")
            if png is not None and png != last_png:
                figs.append(at)
                last_png = png
            rss.append([done, status_kb(pid, "VmRSS")])
        out["sweep_s"] = time.monotonic() - t0
        r = reply(kc, msg_id, 60)
        check(r["content"]["status"] == "ok", "evaluate: %s" % r["content"])
        check(rss and rss[-1][0] == total, "the last display shows %s of %d runs" % (rss[-1:], total))
        out.update(runs=total, updates=updates, figures=figs, rss=rss, hwm_kb=status_kb(pid, "VmHWM"))

        # The tables and figures of the result: the round trip of each and
        # the kernel's processor time in it.
        out["commands"] = {}
        for code in ("table configs", "table best", "plot speedup", "plot error", "plot configs"):
            c0 = cpu_s(pid)
            r, got, rt = run_cell(kc, code, 120)
            kinds = {m["msg_type"] for _, m in got}
            check("execute_result" in kinds or "display_data" in kinds, "%s showed nothing: %s" % (code, kinds))
            out["commands"][code] = [rt, cpu_s(pid) - c0]

        # Small cells, one after another: each one's round trip.
        small = ["status", "help tolerance", "tolerance 2^-2", "policy eager,conditional", "reps 2", "help", "space"]
        trips = []
        for i in range(ncells):
            r, got, rt = run_cell(kc, small[i % len(small)], 60)
            check(any(m["msg_type"] in ("execute_result", "stream") for _, m in got) or small[i % len(small)].startswith(("tolerance", "policy", "reps")),
                  "cell %d (%s) showed nothing" % (i, small[i % len(small)]))
            trips.append(rt)
        out["cells"] = trips
        out["hwm_end_kb"] = status_kb(pid, "VmHWM")
    finally:
        stop(km, kc)
    with open(os.environ["APPROXTUNE_LOAD_OUT"], "w") as f:
        json.dump(out, f)
    print("OK", flush=True)


main()
