"""An interrupt in the middle of a sweep ends the cell with an error, and
the next cell works: by interrupt_request (the kernelspec's interrupt_mode
is message), by SIGINT, and twice (which stops mpirun)."""
import signal
import time

from common import check, execute, fail, first, outputs, reply, start, stop, types

SWEEP = ("workload synthetic steps=50 count=8 mean_us=4000\n"
         "space grid=1x4,2x2,4x1\n"
         "reps 1\npolicy conditional,eager\ntolerance 0\n")
# Twice: runs twice as long, so that the second interrupt lands seconds
# before the run under way ends (still well within the kernel's 15 s grace,
# after which one interrupt stops mpirun by itself).
SWEEP_LONG = SWEEP.replace("mean_us=4000", "mean_us=8000")


def read_until(kc, msg_id, got, timeout, what, shown):
    """Read the cell's iopub messages into got until a display update whose
    text satisfies shown; fail with what if the cell ends or timeout
    seconds pass first."""
    deadline = time.time() + timeout
    while True:
        if time.time() > deadline:
            fail("%s: %s" % (what, types(got)))
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        got.append(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            errs = [x["content"].get("evalue") for x in got if x["msg_type"] == "error"]
            fail("%s before the cell ended: %s; error %s" % (what, types(got), errs))
        if m["msg_type"] == "update_display_data" and shown(m["content"]["data"]["text/plain"]):
            return


def sweep_then(kc, km, mode, interrupt, sweep=SWEEP):
    """Start a sweep, interrupt it once its first result is shown, and
    return the reply, the iopub messages and the seconds the cell took to
    end after the interrupt."""
    msg_id = kc.execute(sweep + mode)
    got = []
    # The progress line: "sweep N evaluate synthetic: DONE/TOTAL runs, ..."
    read_until(kc, msg_id, got, 90, "the sweep never showed a result",
               lambda text: ": 0/" not in text.split("\n")[0])
    time.sleep(0.2)  # into the next run (tolerance 0: every run is a full one)
    t = time.time()
    interrupt(msg_id, got)
    r = reply(kc, msg_id, 60)
    took = time.time() - t
    got += outputs(kc, msg_id, 30)
    return r, got, took


km, kc = start()
try:
    def by_message(msg_id, got):
        km.interrupt_kernel()  # interrupt_mode message: an interrupt_request on control

    def by_signal(msg_id, got):
        km.signal_kernel(signal.SIGINT)

    for name, interrupt in [("interrupt_request", by_message), ("SIGINT", by_signal)]:
        r, got, took = sweep_then(kc, km, "evaluate", interrupt)
        c = r["content"]
        print("%s: the cell ended %.1fs after the interrupt: %s" % (name, took, c.get("evalue")), flush=True)
        check(c["status"] == "error" and c["ename"] == "Interrupted" and "cancelled after" in c["evalue"], "%s: reply %s" % (name, c))
        check(took < 30, "%s: the cell took %.1fs to end" % (name, took))
        e = first(got, "error")
        check(e is not None and e["content"]["ename"] == "Interrupted", "%s: no error message: %s" % (name, types(got)))
        finals = [m for m in got if m["msg_type"] == "update_display_data"]
        check("(cancelled)" in finals[-1]["content"]["data"]["text/plain"], "%s: final display %s" % (name, finals[-1]["content"]["data"]["text/plain"]))
        check(km.is_alive(), "%s: the kernel died" % name)
        r, outs = execute(kc, "status")
        check(r["content"]["status"] == "ok", "%s: the next cell: %s" % (name, r["content"]))
        text = first(outs, "execute_result")["content"]["data"]["text/plain"]
        check("agent       4 ranks" in text, "%s: the agent should still be there:\n%s" % (name, text))

    # Twice: mpirun is stopped; the next sweep starts a new agent. The second
    # interrupt goes as soon as the display shows that the first one was
    # taken (the "cancelling" note), well before the run under way ends.
    def twice(msg_id, got):
        km.interrupt_kernel()
        read_until(kc, msg_id, got, 60, "twice: the display never showed the first interrupt",
                   lambda text: "cancelling: the sweep stops" in text)
        km.interrupt_kernel()

    r, got, took = sweep_then(kc, km, "evaluate", twice, sweep=SWEEP_LONG)
    c = r["content"]
    print("twice: the cell ended %.1fs after the interrupts: %s" % (took, c.get("evalue")), flush=True)
    check(c["status"] == "error" and c["ename"] == "Interrupted" and "mpirun was stopped" in c["evalue"], "twice: reply %s" % c)
    check(took < 30, "twice: the cell took %.1fs to end" % took)
    r, outs = execute(kc, "status")
    check("agent       none: " in first(outs, "execute_result")["content"]["data"]["text/plain"], "the agent should be gone")
    r, outs = execute(kc, "workload synthetic steps=5 count=2\nspace reset\nreps 1\npolicy eager\ntolerance 2^-1\nevaluate", timeout=120)
    check(r["content"]["status"] == "ok", "after the double interrupt: %s" % r["content"])
    check("starting a local agent" in "".join(m["content"].get("text", "") for m in outs), "no new agent: %s" % types(outs))
finally:
    stop(km, kc)
print("OK", flush=True)
