"""Helpers the approxtune kernel's integration scripts share.

They drive the real jupyter_client (Debian's python3-jupyter-client) against
the kernelspec named approxtune that the Go test installed on JUPYTER_PATH.
"""
import sys
import time

import jupyter_client


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def start(name="approxtune", timeout=60):
    """Start a kernel and a blocking client, ready."""
    km = jupyter_client.KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=timeout)
    except Exception:
        stop(km, kc)
        raise
    return km, kc


def stop(km, kc):
    try:
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=False)
        if km.is_alive():
            km.shutdown_kernel(now=True)


def outputs(kc, msg_id, timeout=60):
    """The iopub messages caused by msg_id, up to its status idle."""
    got = []
    deadline = time.time() + timeout
    while True:
        left = deadline - time.time()
        if left <= 0:
            fail("no status idle for %s; got %s" % (msg_id, [m["msg_type"] for m in got]))
        try:
            m = kc.get_iopub_msg(timeout=left)
        except Exception:
            continue
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        got.append(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return got


def reply(kc, msg_id, timeout=60, channel="shell"):
    deadline = time.time() + timeout
    get = kc.get_shell_msg if channel == "shell" else kc.get_control_msg
    while time.time() < deadline:
        try:
            m = get(timeout=max(0.01, deadline - time.time()))
        except Exception:
            continue
        if m["parent_header"].get("msg_id") == msg_id:
            return m
    fail("no %s reply to %s within %ss" % (channel, msg_id, timeout))


def execute(kc, code, timeout=60, **kw):
    """Run code: its execute_reply and its iopub messages."""
    msg_id = kc.execute(code, **kw)
    r = reply(kc, msg_id, timeout)
    return r, outputs(kc, msg_id, timeout)


def types(msgs):
    return [m["msg_type"] for m in msgs]


def first(msgs, msg_type):
    for m in msgs:
        if m["msg_type"] == msg_type:
            return m
    return None
