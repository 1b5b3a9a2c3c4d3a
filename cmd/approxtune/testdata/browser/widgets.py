"""What both widget front ends show of 'controls', found in the DOM by the
widgets' descriptions."""
import time

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from common import check, fail, log, wait

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
    gives {'policies': ['conditional', 'eager']}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and not line.startswith(" "):
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


def change_controls(drv, handle):
    """Changes the tolerance and the policies. A tolerance slider moves two
    steps with the keyboard on its handle (a CSS selector: the front ends'
    sliders differ); a tolerance multi-select, like the policy one, gets
    options other than the selected ones. Returns the tolerances and the
    policies now chosen."""
    tol = by_label(drv, "tolerance")
    if tol.find_elements(By.CSS_SELECTOR, "select"):
        log("tolerance: a multiple selection")
        tols, _ = _toggle(Select(tol.find_element(By.CSS_SELECTOR, "select")))
    else:
        readout = lambda: tol.find_element(By.CSS_SELECTOR, ".widget-readout").text.strip()
        before = readout()
        h = tol.find_element(By.CSS_SELECTOR, handle)
        h.send_keys(Keys.ARROW_RIGHT)
        h.send_keys(Keys.ARROW_RIGHT)
        after = wait("the tolerance readout to change from %s" % before, lambda: readout() != before and readout(), timeout=10)
        log("tolerance %s -> %s" % (before, after))
        tols = [after]
    log("policy:")
    pols, options = _toggle(Select(by_label(drv, "policy").find_element(By.CSS_SELECTOR, "select")))
    check(len(options) == 5, "policy options %s, want the five policies" % options)
    return tols, pols


def check_rendered(drv):
    """Waits for every control of 'controls', found by its description."""
    wait("the controls' widgets", lambda: all(by_label(drv, n) for n in NAMES["labels"]), timeout=30)
    for b in NAMES["buttons"]:
        check(button(drv, b) is not None, "no %s button" % b)
    check(drv.find_elements(By.CSS_SELECTOR, ".widget-html"), "no HTML output area")


def until_status(run_status, tols, pols, timeout=20):
    """Executes 'status' (run_status() returns its text) until it shows
    these tolerances and policies, in any order (once the front end's
    throttled updates have all gone); returns its text, or fails showing
    the last one."""
    deadline = time.time() + timeout
    while True:
        text = run_status()
        v = status_values(text)
        if sorted(v.get("tolerances", [])) == sorted(tols) and sorted(v.get("policies", [])) == sorted(pols):
            return text
        if time.time() > deadline:
            fail("status does not show tolerances %s and policies %s after %d s:\n%s" % (tols, pols, timeout, text))
        time.sleep(0.5)
