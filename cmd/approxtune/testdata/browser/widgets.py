"""What both widget front ends show of 'controls', found in the DOM by the
widgets' descriptions."""
import time

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from common import check, fail, journal, log, wait

NAMES = {
    # Widgets with a description label (the workload summa's parameters n and b).
    "labels": ["policy", "tolerance", "grid", "n", "b"],
    "buttons": ["evaluate", "tune", "cancel"],
}

_BY_LABEL = """
var ls = document.querySelectorAll('.widget-label');
for (var i = 0; i < ls.length; i++) {
  if (ls[i].textContent.trim() === arguments[0] && ls[i].offsetParent !== null) return ls[i].parentElement;
}
return null;
"""

_BUTTON = """
var bs = document.querySelectorAll('.widget-button');
for (var i = 0; i < bs.length; i++) {
  if (bs[i].textContent.trim() === arguments[0]) return bs[i];
}
return null;
"""


def by_label(drv, name):
    """The widget (its box) whose description is name, or None."""
    try:
        return drv.execute_script(_BY_LABEL, name)
    except WebDriverException:
        return None


def button(drv, name):
    """The button whose description is name (.widget-button: the output
    area's own close button is a plain button), or None."""
    return drv.execute_script(_BUTTON, name)


def status_values(text):
    """'status' output as {name: [values]}: 'policies    conditional, eager'
    gives {'policies': ['conditional', 'eager']}, '  b   64,128' (a
    parameter of the workload) {'b': ['64', '128']}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            out[parts[0]] = [v.strip() for v in parts[1].split(",")]
    return out


def _toggle(sel):
    """Selects, in a multi-select, options other than the selected ones
    (WebDriver's click toggles an option: the new ones first, so that the
    selection is never empty on the way); returns the selected labels."""
    options = [o.text.strip() for o in sel.options]
    current = [o.text.strip() for o in sel.all_selected_options]
    want = options[-2:] if options[-2:] != current else options[:1]
    for o in sel.options:
        if o.text.strip() in want and not o.is_selected():
            o.click()
    for o in sel.options:
        if o.text.strip() not in want and o.is_selected():
            o.click()
    log("%s -> %s" % (current, want))
    return want, options


def _move_slider(drv):
    """Moves the tolerance slider one step with the arrow keys on its
    handle (jQuery UI's in the classic Notebook, noUiSlider's in protocol
    2): right, toward tighter tolerances, or left where it stands at the
    tightest. Returns the label its readout shows then."""
    box = by_label(drv, "tolerance")
    handle = box.find_element(By.CSS_SELECTOR, ".ui-slider-handle, .noUi-handle")
    readout = lambda: box.find_element(By.CSS_SELECTOR, ".widget-readout").text.strip()
    before = readout()
    check(before.startswith("2^"), "the tolerance slider's readout shows %r, want a power of two" % before)
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_LEFT):
        drv.execute_script("arguments[0].focus()", handle)
        handle.send_keys(key)
        deadline = time.time() + 3
        while time.time() < deadline:
            after = readout()
            if after != before:
                log("%s -> %s" % (before, after))
                return after
            time.sleep(0.2)
    fail("the tolerance slider stays at %s under the arrow keys" % before)


def change_controls(drv):
    """Moves the tolerance slider a step, changes the policies (a multiple
    selection: options other than the selected ones) and the parameter b
    (its text box: 128, Enter). Returns the tolerances, policies and b's
    values now chosen, and prints them (POLICIES=, TOLERANCES=, B=)."""
    log("tolerance:")
    tols = [_move_slider(drv)]
    log("policy:")
    pols, options = _toggle(Select(by_label(drv, "policy").find_element(By.CSS_SELECTOR, "select")))
    check(len(options) == 5, "policy options %s, want the five policies" % options)
    box = by_label(drv, "b").find_element(By.CSS_SELECTOR, "input")
    # Typed over the selected old text, as a user would: clear() would
    # submit an empty value first.
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("128" + Keys.ENTER)
    # For the Go test, which compares them with the journal.
    log("POLICIES=%s" % ",".join(pols))
    log("TOLERANCES=%s" % ",".join(tols))
    log("B=128")
    return tols, pols, ["128"]


_LIST_FIT = """
var sel = arguments[0].querySelector('select');
var opt = sel.options[0].getBoundingClientRect().height;
return [sel.options.length, sel.clientHeight, sel.scrollHeight, opt];
"""


def check_rendered(drv):
    """Waits for every control of 'controls', found by its description;
    the lists (policy, grid) show every option without a scroll bar and
    without more than a row to spare."""
    wait("the controls' widgets", lambda: all(by_label(drv, n) for n in NAMES["labels"]), timeout=30)
    for b in NAMES["buttons"]:
        check(button(drv, b) is not None, "no %s button" % b)
    check(drv.find_elements(By.CSS_SELECTOR, ".widget-html"), "no HTML output area")
    for name in ("policy", "grid"):
        fit = lambda: drv.execute_script(_LIST_FIT, by_label(drv, name))
        wait("the %s list to fit its options" % name, lambda: fit()[2] <= fit()[1] + 1, timeout=10)
        n, client, _, opt = fit()
        log("%s list: %d options, %d px high, an option %.1f px" % (name, n, client, opt))
        check(client <= (n + 1) * opt + 8, "the %s list is %d px high for %d options of %.1f px" % (name, client, n, opt))


def until_status(run_status, tols, pols, b, timeout=20):
    """Executes 'status' (run_status() returns its text) until it shows
    these tolerances, policies (in any order) and values of b (once the
    front end's throttled updates have all gone); returns its text, or
    fails showing the last one."""
    deadline = time.time() + timeout
    while True:
        text = run_status()
        v = status_values(text)
        if (sorted(v.get("tolerances", [])) == sorted(tols) and sorted(v.get("policies", [])) == sorted(pols)
                and v.get("b") == b):
            return text
        if time.time() > deadline:
            fail("status does not show tolerances %s, policies %s and b %s after %d s:\n%s" % (tols, pols, b, timeout, text))
        time.sleep(0.5)


def click_evaluate(drv, shoot):
    """Clicks evaluate and waits for its sweep's end in the kernel's
    journal and in the controls' output area; shoot(name) takes the
    screenshots 'running' and 'done'. The sweep must be the session's
    first."""
    # Settings may be journaled (a session directory of the user's choosing
    # keeps them); nothing of a sweep may be.
    early = [r for r in journal() if r.get("kind") != "state"]
    check(not early, "the journal has records of a sweep before evaluate was clicked: %s" % [r.get("kind") for r in early])
    button(drv, "evaluate").click()
    wait("the evaluate button's sweep to start", lambda: any(r.get("kind") == "sweep" for r in journal()), timeout=30)
    shoot("running")
    end = wait("the sweep's end in the journal", lambda: [r for r in journal() if r.get("kind") == "end"], timeout=90)
    check(end[0].get("status") == "ok", "the sweep ended %s: %s" % (end[0].get("status"), end[0].get("message")))
    sw = [r for r in journal() if r.get("kind") == "sweep"][0]["spec"]
    log("journaled: %s, policies %s, tolerances %s, space %s" % (sw.get("mode"), sw.get("policies"), sw.get("tolerances"), sw.get("space")))
    area = lambda: " ".join(e.text for e in drv.find_elements(By.CSS_SELECTOR, ".widget-html"))
    text = wait("the sweep's end in the output area", lambda: "(ok)" in area() and area(), timeout=10)
    check("sweep 1 evaluate" in text, "the output area does not show the sweep: %s" % text)
    time.sleep(1)  # the figures' last redraw
    shoot("done")
