"""kernel_info, execute, complete, inspect, is_complete, history, comm_info
and shutdown through jupyter_client's KernelManager and BlockingKernelClient."""
import os
import time

from common import check, execute, fail, first, outputs, reply, start, stop, types

km, kc = start()
try:
    # kernel_info (wait_for_ready already needed one, with its iopub status).
    msg_id = kc.kernel_info()
    r = reply(kc, msg_id)
    c = r["content"]
    check(c["status"] == "ok" and c["protocol_version"] == "5.3" and c["implementation"] == "approxtune", "kernel_info %s" % c)
    li = c["language_info"]
    check(li["name"] == "approxtune" and li["file_extension"] == ".atune" and li["mimetype"] == "text/x-approxtune", "language_info %s" % li)
    check(types(outputs(kc, msg_id)) == ["status", "status"], "kernel_info iopub")

    # execute: the answer is the execute_result, text/plain and text/html.
    r, outs = execute(kc, "status")
    check(r["content"]["status"] == "ok" and r["content"]["execution_count"] == 1, "execute_reply %s" % r["content"])
    check(types(outs) == ["status", "execute_input", "execute_result", "status"], "iopub %s" % types(outs))
    data = first(outs, "execute_result")["content"]["data"]
    check("workload    summa" in data["text/plain"] and data["text/html"].startswith("<pre>"), "execute_result %s" % data)

    # Several commands; the earlier answers are streams.
    r, outs = execute(kc, "workload synthetic steps=5 count=2\nreps 1\nstatus")
    check(first(outs, "stream")["content"]["text"].startswith("workload synthetic:"), "stream %s" % types(outs))
    check("reps        1" in first(outs, "execute_result")["content"]["data"]["text/plain"], "state")

    # An error: error message, error reply, traceback pointing at the column.
    r, outs = execute(kc, "policy eager,sloppy")
    c = r["content"]
    check(c["status"] == "error" and c["ename"] == "CommandError" and "sloppy" in c["evalue"], "error reply %s" % c)
    e = first(outs, "error")["content"]
    check(e["traceback"][0] == "line 1: policy eager,sloppy" and e["traceback"][1].index("^") == len("line 1: policy eager,"), "traceback %s" % e["traceback"])

    # silent and store_history.
    r, outs = execute(kc, "status", silent=True)
    check(types(outs) == ["status", "status"], "silent iopub %s" % types(outs))
    r, outs = execute(kc, "help", store_history=False)
    check(r["content"]["execution_count"] == 3, "store_history=False count %s" % r["content"])

    # complete: the word's start and end; unicode code points before it.
    c = kc.complete("wor", 3, reply=True, timeout=30)["content"]
    check(c["status"] == "ok" and "workload" in c["matches"] and (c["cursor_start"], c["cursor_end"]) == (0, 3), "complete %s" % c)
    code = 'save "données.jsonl"\npolicy conditional,ea'
    c = kc.complete(code, len(code), reply=True, timeout=30)["content"]
    check(c["matches"] == ["eager"] and c["cursor_start"] == len(code) - 2 and c["cursor_end"] == len(code), "complete unicode %s" % c)
    c = kc.complete("workload synthetic st", 21, reply=True, timeout=30)["content"]
    check("steps=" in c["matches"], "complete keys %s" % c)
    # After load and resume: the session ids, the most recent first.
    sessions = os.environ["APPROXTUNE_TEST_SESSIONS"].split(",")
    for code in ("load ", "resume "):
        c = kc.complete(code, len(code), reply=True, timeout=30)["content"]
        check(c["matches"] == sessions and (c["cursor_start"], c["cursor_end"]) == (len(code), len(code)), "complete %r %s" % (code, c))
    code = "load " + sessions[1][:10]
    c = kc.complete(code, len(code), reply=True, timeout=30)["content"]
    check(c["matches"] == [sessions[1]] and c["cursor_start"] == 5, "complete %r %s" % (code, c))

    # inspect: help for the word under the cursor.
    c = kc.inspect("tolerance 2^-3", 4, reply=True, timeout=30)["content"]
    check(c["status"] == "ok" and c["found"] and c["data"]["text/plain"].startswith("tolerance [T[,T...]"), "inspect %s" % c)
    c = kc.inspect("frobnicate", 4, reply=True, timeout=30)["content"]
    check(c["status"] == "ok" and not c["found"], "inspect unknown %s" % c)

    # is_complete.
    for code, want in [("status", "complete"), ('save "results', "invalid"), ("", "complete")]:
        msg_id = kc.is_complete(code)
        c = reply(kc, msg_id)["content"]
        check(c["status"] == want, "is_complete %r: %s" % (code, c))

    # history: tail, range and search over this kernel's cells.
    h = kc.history(hist_access_type="tail", n=2, raw=True, output=False, reply=True, timeout=30)["content"]["history"]
    check([x[2] for x in h] == ["workload synthetic steps=5 count=2\nreps 1\nstatus", "policy eager,sloppy"] and h[-1][1] == 3, "history tail %s" % h)
    h = kc.history(hist_access_type="range", session=0, start=1, stop=3, raw=True, output=False, reply=True, timeout=30)["content"]["history"]
    check([x[1] for x in h] == [1, 2], "history range %s" % h)
    h = kc.history(hist_access_type="search", pattern="workload*", raw=True, output=True, reply=True, timeout=30)["content"]["history"]
    check(len(h) == 1 and h[0][2][0].startswith("workload synthetic") and "reps        1" in h[0][2][1], "history search %s" % h)

    # comm_info: no comms.
    c = kc.comm_info(reply=True, timeout=30)["content"]
    check(c == {"status": "ok", "comms": {}}, "comm_info %s" % c)

    # controls: widgets in protocol 2 (no legacy version comm was opened),
    # listed by comm_info; a value change from the front end runs the
    # command, and an unknown comm gets a CommError.
    r, outs = execute(kc, "controls")
    opens = [m for m in outs if m["msg_type"] == "comm_open"]
    check(opens and all(m["content"]["target_name"] == "jupyter.widget" and m["metadata"] == {"version": "2.1.0"}
                        and m["content"]["data"]["buffer_paths"] == [] for m in opens), "controls comm_open %s" % opens[:1])
    ids = {m["content"]["comm_id"] for m in opens}
    by_desc = {m["content"]["data"]["state"].get("description"): m["content"]["comm_id"] for m in opens}
    data = first(outs, "display_data")["content"]["data"]
    view = data["application/vnd.jupyter.widget-view+json"]
    check(view["model_id"] in ids and view["version_major"] == 2 and "need a Jupyter front end with widgets" in data["text/plain"], "controls display %s" % data)
    c = kc.comm_info(target_name="jupyter.widget", reply=True, timeout=30)["content"]
    check(set(c["comms"]) == ids and all(v == {"target_name": "jupyter.widget"} for v in c["comms"].values()), "comm_info jupyter.widget %s" % c)
    c = kc.comm_info(target_name="jupyter.widget.version", reply=True, timeout=30)["content"]
    check(c == {"status": "ok", "comms": {}}, "comm_info jupyter.widget.version %s" % c)
    msg = kc.session.msg("comm_msg", {"comm_id": by_desc["tolerance"], "data": {"method": "update", "state": {"index": 4}, "buffer_paths": []}})
    kc.shell_channel.send(msg)
    outs = outputs(kc, msg["header"]["msg_id"])
    check(types(outs)[0] == "status" and "error" not in types(outs), "comm_msg iopub %s" % types(outs))
    r, outs = execute(kc, "status", store_history=False)
    check("tolerances  2^-4\n" in first(outs, "execute_result")["content"]["data"]["text/plain"], "tolerance from the widget")
    msg = kc.session.msg("comm_msg", {"comm_id": "nope", "data": {"method": "request_state"}})
    kc.shell_channel.send(msg)
    e = first(outputs(kc, msg["header"]["msg_id"]), "error")["content"]
    check(e["ename"] == "CommError" and "no comm nope" in e["evalue"], "comm error %s" % e)

    # load: another session's sweep becomes the one tables read.
    r, outs = execute(kc, "load " + sessions[0], store_history=False)
    text = "".join(m["content"].get("text", "") + m["content"].get("data", {}).get("text/plain", "") for m in outs)
    check(r["content"]["status"] == "ok" and ("loaded 1 sweep of session %s" % sessions[0]) in text and "analyses: model, anomalies" in text, "load %s" % text)
    r, outs = execute(kc, "table best", store_history=False)
    check(first(outs, "execute_result")["content"]["data"]["text/plain"].startswith("sweep 1: evaluate synthetic, 4 of 4 runs (ok)"), "table best after load %s" % outs)

    # The heartbeat answers.
    check(kc.is_alive(), "heartbeat")
finally:
    # shutdown_kernel sends shutdown_request, waits half of shutdown_wait_time
    # for the kernel to exit, then sends SIGTERM (and SIGKILL after the other
    # half). With 30 s, an exit within 15 s is the kernel's own answer to
    # shutdown_request, not to a signal, however slow the machine.
    km.shutdown_wait_time = 30.0
    proc = getattr(km.provisioner, "process", None)
    t = time.time()
    stop(km, kc)
    took = time.time() - t
print("shutdown took %.2fs" % took)
if proc is None:
    fail("no kernel process to check the exit of")
rc = proc.poll()
if took >= 15:
    fail("the kernel did not exit on shutdown_request: it took %.2fs (exit status %s)" % (took, rc))
if rc != 0:
    fail("the kernel did not exit cleanly on shutdown_request: exit status %s (negative: killed by that signal)" % rc)
print("OK", flush=True)
