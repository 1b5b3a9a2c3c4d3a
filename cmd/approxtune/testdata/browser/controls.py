"""'controls' in the classic Notebook (legacy widgets, ipywidgets 6).

Renders the controls, moves the tolerance slider with the keyboard and
selects policies; a 'status' cell shows them; the evaluate button runs a
sweep, which the session journals. Prints what it chose (POLICIES=,
TOLERANCES=) for the Go test to compare with the journal.
"""
import os
import time

from common import Classic, check, console, fail, journal, log, main, shot, wait
from widgets import button, change_controls, check_rendered, until_status


def body(drv):
    nb = Classic(drv, os.environ["ATUNE_NOTEBOOK"])
    nb.run(0)
    out = nb.run(1)
    if any(o.get("output_type") == "error" for o in out):
        fail("controls: %s" % nb.text(1))
    check_rendered(drv)
    # The kernel answered the front end's version comm (ipywidgets 6's
    # jupyter.widget.version): the front end says so in its console, or
    # warns after 3 s without an answer.
    seen = []

    def validated():
        seen.extend(l for l in console(drv) if "versions are" in l or "cross validate" in l)
        return seen
    wait("the widget version check in the console", validated, timeout=10)
    check(all("versions are compatible" in l for l in seen), "the widget versions were not validated: %s" % seen)
    shot(nb.cell(1), "controls-classic.png")

    # jupyter-js-widgets' sliders are jQuery UI's.
    tols, pols = change_controls(drv, ".ui-slider-handle")
    log("POLICIES=%s" % ",".join(pols))
    log("TOLERANCES=%s" % ",".join(tols))

    # A 'status' cell shows them.
    st = nb.append("status")

    def status():
        nb.run(st)
        return nb.text(st)
    log(until_status(status, tols, pols))

    # evaluate: the button runs the sweep; the journal gets it, to its end.
    check(not journal(), "the journal has records before evaluate was clicked")
    button(drv, "evaluate").click()
    wait("the evaluate button's sweep to start", lambda: any(r.get("kind") == "sweep" for r in journal()), timeout=30)
    shot(nb.cell(1), "controls-classic-running.png")
    end = wait("the sweep's end in the journal", lambda: [r for r in journal() if r.get("kind") == "end"], timeout=90)
    check(end[0].get("status") == "ok", "the sweep ended %s: %s" % (end[0].get("status"), end[0].get("message")))
    sw = [r for r in journal() if r.get("kind") == "sweep"][0]
    log("journaled: %s, policies %s, tolerances %s" % (sw["spec"].get("mode"), sw["spec"].get("policies"), sw["spec"].get("tolerances")))
    time.sleep(1.5)  # the output area's last redraw
    shot(nb.cell(1), "controls-classic-done.png")
    nb.shutdown()


main(body)
