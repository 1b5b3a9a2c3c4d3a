#!/usr/bin/python3
"""Round trip of a trivial cell through jupyter_client: approxtune vs ipykernel.

For each kernel, the time from sending an execute_request to having both its
execute_reply (shell) and its status idle (iopub), as a notebook front end
waits for them. approxtune runs `status` (no agent is started or contacted:
the script checks that no agent was started);
ipykernel runs `pass`. Requests alternate between the two kernels so that
drift in the machine's load affects both alike.

    /usr/bin/python3 bench/kernelrtt/rtt.py [--approxtune PATH] [-n 500] [--warmup 50] [--json]

Run it with the Python that has jupyter_client and ipykernel (Debian:
python3-jupyter-client, python3-ipykernel). The approxtune kernelspec and an
ipykernel kernelspec for this Python are installed into a temporary
JUPYTER_PATH; nothing is written elsewhere.
"""
import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import jupyter_client


def start(name):
    km = jupyter_client.KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def round_trip(kc, code):
    """Seconds from execute_request to execute_reply and status idle."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        m = kc.get_shell_msg(timeout=30)
        if m["parent_header"].get("msg_id") == msg_id:
            break
    status = m["content"]["status"]
    while True:
        m = kc.get_iopub_msg(timeout=30)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    dt = time.perf_counter() - t0
    if status != "ok":
        raise SystemExit("%r failed: %s" % (code, status))
    return dt


def summary(xs):
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]
    return {"n": len(xs), "median_ms": 1e3 * statistics.median(xs), "p10_ms": 1e3 * q(0.10),
            "p90_ms": 1e3 * q(0.90), "mean_ms": 1e3 * statistics.fmean(xs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--approxtune", default=shutil.which("approxtune"), help="the approxtune binary (default: on PATH)")
    ap.add_argument("-n", type=int, default=500, help="measured round trips per kernel")
    ap.add_argument("--warmup", type=int, default=50, help="round trips not measured, per kernel")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args()
    if not a.approxtune:
        raise SystemExit("no approxtune binary: give --approxtune PATH")

    tmp = tempfile.mkdtemp(prefix="kernelrtt-")
    try:
        prefix = os.path.join(tmp, "prefix")
        subprocess.run([a.approxtune, "install", "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
        kernels = os.path.join(prefix, "share", "jupyter", "kernels")
        os.makedirs(os.path.join(kernels, "ipykernel-bench"))
        with open(os.path.join(kernels, "ipykernel-bench", "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "ipykernel (bench)", "language": "python"}, f)
        os.environ.update({
            "JUPYTER_PATH": os.path.join(prefix, "share", "jupyter"),
            "JUPYTER_RUNTIME_DIR": os.path.join(tmp, "runtime"),
            "JUPYTER_DATA_DIR": os.path.join(tmp, "data"),
            "IPYTHONDIR": os.path.join(tmp, "ipython"),
            "APPROXTUNE_SESSION_DIR": os.path.join(tmp, "session"),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        })
        runs = {"approxtune": ("approxtune", "status"), "ipykernel": ("ipykernel-bench", "pass")}
        started = {k: start(spec) for k, (spec, _) in runs.items()}
        times = {k: [] for k in runs}
        try:
            for i in range(a.warmup + a.n):
                for k, (_, code) in runs.items():
                    dt = round_trip(started[k][1], code)
                    if i >= a.warmup:
                        times[k].append(dt)
            # `status` must not have started an agent.
            kc = started["approxtune"][1]
            msg_id = kc.execute("status")
            while True:
                m = kc.get_iopub_msg(timeout=30)
                if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_result":
                    if "agent       none: " not in m["content"]["data"]["text/plain"]:
                        raise SystemExit("an agent was started:\n" + m["content"]["data"]["text/plain"])
                    break
        finally:
            for km, kc in started.values():
                kc.stop_channels()
                km.shutdown_kernel()
            started.clear()
            gc.collect()  # close the clients now, not in interpreter teardown
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    res = {k: summary(v) for k, v in times.items()}
    res["ratio_median"] = res["approxtune"]["median_ms"] / res["ipykernel"]["median_ms"]
    res["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                      "jupyter_client": jupyter_client.__version__}
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print("round trip execute_request -> execute_reply + status idle, %d requests each (after %d warm-up), %d CPUs"
          % (a.n, a.warmup, os.cpu_count()))
    print("%-28s %10s %10s %10s %10s" % ("kernel (cell)", "median ms", "p10 ms", "p90 ms", "mean ms"))
    for k, (_, code) in runs.items():
        s = res[k]
        print("%-28s %10.3f %10.3f %10.3f %10.3f" % ("%s (%s)" % (k, code), s["median_ms"], s["p10_ms"], s["p90_ms"], s["mean_ms"]))
    print("approxtune / ipykernel median: %.2f" % res["ratio_median"])


if __name__ == "__main__":
    main()
