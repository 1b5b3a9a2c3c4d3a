"""Widget protocol 2: 'controls' in the web/widgets2 page (ipywidgets 8's
widget manager on jupyter_server).

Renders the controls, selects tolerances and policies and types b's values,
then executes 'status' from the page until it shows them; the evaluate
button runs a sweep, which the session journals.
"""
from common import URL, TOKEN, check, fail, log, main, shot, wait
from widgets import change_controls, check_rendered, click_evaluate, until_status

SETUP = "workload summa n=512\nspace b=64,128 grid=1x4,2x2\nreps 1"


def execute(drv, code):
    """Executes code as a new cell of the page; returns its record."""
    return drv.execute_async_script(
        "var cb = arguments[arguments.length - 1];"
        "atune.execute(arguments[0]).then(function (c) { cb({status: c.status, text: c.text, outputs: c.outputs}); },"
        " function (e) { cb({status: 'failed: ' + e, text: '', outputs: []}); });", code)


def body(drv):
    drv.set_script_timeout(90)
    drv.get("%s/static/index.html?token=%s" % (URL, TOKEN))
    st = wait("the page's kernel", lambda: drv.execute_script(
        "return window.atune && (atune.state.ready || atune.state.error) && atune.state"), timeout=60)
    if st.get("error"):
        fail("the page could not start the kernel: %s" % st["error"])

    c = execute(drv, SETUP)
    check(c["status"] == "ok", "setup cell: %s %s" % (c["status"], c["text"]))
    c = execute(drv, "controls")
    if c["status"] != "ok":
        fail("controls: %s\n%s" % (c["status"], c["text"]))
    check(any(o.get("widget") for o in c["outputs"]),
          "controls displayed no widget view: %s" % [o.get("mimes") for o in c["outputs"]])
    check_rendered(drv)
    # Protocol 2 (the manager would also render ipywidgets 7's models).
    comms = drv.execute_script("return atune.state.comms;")
    check(comms and all(c["version"].startswith("2.") for c in comms),
          "the widget comms are not protocol 2: %s" % sorted(set(c["version"] for c in comms)))
    check(all(c["moduleVersion"].startswith("2.") for c in comms if c["module"] == "@jupyter-widgets/controls"),
          "controls models are not version 2: %s" % comms)
    log("%d widget comms, protocol %s" % (len(comms), sorted(set(c["version"] for c in comms))))
    shot(drv, "controls-protocol2.png")

    tols, pols, b = change_controls(drv)

    # The session has them: 'status', executed from the page, says so.
    log(until_status(lambda: execute(drv, "status")["text"], tols, pols, b))

    # evaluate: the button runs the sweep.
    click_evaluate(drv, lambda name: shot(drv, "controls-protocol2-%s.png" % name))
    drv.execute_async_script("var cb = arguments[arguments.length - 1]; atune.shutdown().then(cb, cb);")


main(body)
