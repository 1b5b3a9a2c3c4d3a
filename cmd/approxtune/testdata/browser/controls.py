"""'controls' in the classic Notebook (legacy widgets, ipywidgets 6).

Renders the controls, selects tolerances and policies and types b's
values; a 'status' cell shows them; the evaluate button runs a sweep, which
the session journals.
"""
import os

from common import Classic, check, console, fail, log, main, shot, wait
from widgets import change_controls, check_rendered, click_evaluate, until_status


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

    tols, pols, b = change_controls(drv)

    # A 'status' cell shows them.
    st = nb.append("status")

    def status():
        nb.run(st)
        return nb.text(st)
    log(until_status(status, tols, pols, b))

    click_evaluate(drv, lambda name: shot(nb.cell(1), "controls-classic-%s.png" % name))
    nb.shutdown()


main(body)
