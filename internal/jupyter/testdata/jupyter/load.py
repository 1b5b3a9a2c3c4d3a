"""Load through the kernel (cmd/approxtune's TestLoadKernel asserts on what
this measures): a sweep of many tiny runs in one cell, then the tables and
figures of its result, then many small cells, each a round trip.

The kernel runs with the collector's trace on its standard error
(GODEBUG=gctrace=1 from the test): the live heap of each collection.
Environment: APPROXTUNE_LOAD_SETUP, the cell that sets the sweep up;
APPROXTUNE_LOAD_CELLS, how many small cells follow; APPROXTUNE_LOAD_OUT, the
file the figures go to as JSON. It prints OK when every cell succeeded.
"""
import json
import os
import re
import time

import subprocess
import threading

import jupyter_client

from common import check, fail, reply, stop

RUNS = re.compile(r"(\d+)/(\d+) runs")
IMGS = re.compile(r"<img [^>]*src=\"(data:[^\"]+)\"")
# The Go runtime's trace of a collection (GODEBUG=gctrace=1): the live heap
# it left is the third of "A->B->C MB".
GC = re.compile(r"^gc \d+ @.* (\d+)->(\d+)->(\d+) MB")


def start_traced():
    """Start a kernel whose standard error (the collector's trace) a thread
    reads: it returns the manager, a ready client, and the list of
    [time.monotonic(), live heap MB] of each collection, as they come."""
    km = jupyter_client.KernelManager(kernel_name="approxtune")
    km.start_kernel(stderr=subprocess.PIPE)
    heap = []

    def read():
        for line in km.provisioner.process.stderr:
            m = GC.match(line.decode(errors="replace"))
            if m:
                heap.append([time.monotonic(), int(m.group(3))])

    threading.Thread(target=read, daemon=True).start()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except Exception:
        stop(km, kc)
        raise
    return km, kc, heap


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
    km, kc, heap = start_traced()
    try:
        pid = km.provisioner.process.pid
        run_cell(kc, setup, 60)
        out["rss_before_kb"] = status_kb(pid, "VmRSS")

        # The sweep: every display message, with the runs it shows done, the
        # kernel's resident memory then, and whether its figures changed.
        t0 = time.monotonic()
        msg_id = kc.execute("evaluate")
        updates, figs, rss, last_imgs = [], [], [], None
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
                # The display's promise (the test checks it again): at most
                # an update per 250 ms. Broken, the sweep crawls: stop now.
                if len(updates) > at / 0.25 + 20:
                    fail("update_display_data: %d in %.1f s, more than one per 250 ms" % (len(updates), at))
            # The figures as drawn: the <img> data URIs of the HTML (the
            # row's image/png comes with the final state only).
            imgs = IMGS.findall(data.get("text/html", ""))
            if imgs and imgs != last_imgs:
                figs.append(at)
                last_imgs = imgs
            rss.append([done, status_kb(pid, "VmRSS"), at])
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
        # Each collection's live heap, in seconds from the sweep's start
        # as the display messages' times are.
        out["heap"] = [[at - t0, mb] for at, mb in list(heap)]
    finally:
        stop(km, kc)
    with open(os.environ["APPROXTUNE_LOAD_OUT"], "w") as f:
        json.dump(out, f)
    print("%d runs in %.1f s, %d cells" % (out["runs"], out["sweep_s"], len(out["cells"])))
    print("OK", flush=True)


main()
