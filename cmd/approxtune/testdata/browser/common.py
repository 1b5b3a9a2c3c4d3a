"""Helpers the browser tests share (cmd/approxtune/browser_test.go).

The Go test starts the Jupyter server and tells a script, in the
environment: ATUNE_URL and ATUNE_TOKEN (the server), ATUNE_CHROMIUM and
ATUNE_CHROMEDRIVER (the browser and its driver), ATUNE_SHOTS (a
directory for screenshots, or empty), ATUNE_SESSION_DIR (the kernel's
session directory), ATUNE_NOTEBOOK (the notebook to open, classic
Notebook). Scripts print OK at the end when every check passed.
"""
import base64
import hashlib
import json
import os
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import JavascriptException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

URL = os.environ["ATUNE_URL"]
TOKEN = os.environ["ATUNE_TOKEN"]
SHOTS = os.environ.get("ATUNE_SHOTS", "")
SESSION_DIR = os.environ.get("ATUNE_SESSION_DIR", "")

_failures = []


def log(msg):
    print(msg, flush=True)


def fail(msg):
    """A failed check that ends the script."""
    log("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    """A check; a failed one is reported and the script goes on."""
    if not cond:
        log("FAIL: " + msg)
        _failures.append(msg)
    return cond


def finish():
    if _failures:
        log("%d check(s) failed" % len(_failures))
        sys.exit(1)
    log("OK")


def wait(what, fn, timeout=30, every=0.2):
    """Calls fn until it returns something true; returns that, or fails."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
        except (JavascriptException, WebDriverException) as e:
            last = e
            v = None
        if v:
            return v
        time.sleep(every)
    fail("waited %ds for %s%s" % (timeout, what, "" if last is None else " (last error: %s)" % str(last).splitlines()[0]))


def browser(width=1200, height=1800):
    """Headless Chromium through the system's chromedriver."""
    o = Options()
    o.binary_location = os.environ.get("ATUNE_CHROMIUM", "/usr/bin/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--hide-scrollbars", "--window-size=%d,%d" % (width, height)):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(os.environ.get("ATUNE_CHROMEDRIVER", "/usr/bin/chromedriver")), options=o)


def console(drv):
    """The browser console's messages so far, for a failure's report."""
    try:
        return ["%s %s" % (e.get("level"), e.get("message")) for e in drv.get_log("browser")]
    except WebDriverException:
        return []


def save(png, name):
    """Saves a PNG as ATUNE_SHOTS/name when screenshots are wanted."""
    if SHOTS:
        path = os.path.join(SHOTS, name)
        with open(path, "wb") as f:
            f.write(png)
        log("screenshot %s" % path)


def shot(el, name):
    """Saves a screenshot of el (a driver or an element) as ATUNE_SHOTS/name
    when screenshots are wanted; returns the PNG either way."""
    png = el.screenshot_as_png if hasattr(el, "screenshot_as_png") else el.get_screenshot_as_png()
    save(png, name)
    return png


def main(body):
    """Runs body(driver) in a fresh headless Chromium, then finish(); on a
    failure prints the browser's console and, when screenshots are wanted,
    saves the page as SCRIPT-failure.png. The browser is quit either way."""
    drv = browser()
    try:
        body(drv)
        finish()
    except BaseException:
        for line in console(drv):
            log("console: " + line)
        try:
            shot(drv, os.path.basename(sys.argv[0]).replace(".py", "-failure.png"))
        except WebDriverException:
            pass
        raise
    finally:
        drv.quit()


def digest(b):
    if isinstance(b, str):
        b = b.encode()
    return hashlib.sha256(b).hexdigest()[:12]


def data_uri(src):
    """(MIME type, bytes) of a data: URI, or (None, None)."""
    if not src or not src.startswith("data:") or "," not in src:
        return None, None
    head, data = src[5:].split(",", 1)
    mime = head.split(";")[0]
    if head.endswith(";base64"):
        return mime, base64.b64decode(data)
    from urllib.parse import unquote
    return mime, unquote(data).encode()


def journal():
    """The records of the kernel's session journal (results.jsonl)."""
    path = os.path.join(SESSION_DIR, "results.jsonl")
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


class Classic:
    """A notebook open in the classic Notebook (6), driven through its
    JavaScript (Jupyter.notebook) and its DOM."""

    def __init__(self, drv, name):
        self.drv = drv
        drv.get("%s/notebooks/%s?token=%s" % (URL, name, TOKEN))
        wait("the notebook's kernel", lambda: drv.execute_script(
            "return window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&"
            " Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel.info_reply &&"
            " Jupyter.notebook.kernel.info_reply.implementation"), timeout=60)

    def js(self, code, *args):
        return self.drv.execute_script(code, *args)

    def ncells(self):
        return self.js("return Jupyter.notebook.ncells()")

    def append(self, source):
        """A new code cell at the bottom; returns its index."""
        return self.js("var c = Jupyter.notebook.insert_cell_at_bottom('code'); c.set_text(arguments[0]);"
                       " return Jupyter.notebook.find_cell_index(c);", source)

    def execute(self, i):
        """Starts cell i (its prompt shows '*' until the kernel's reply)."""
        self.js("Jupyter.notebook.get_cell(arguments[0]).execute();", i)

    def done(self, i):
        """Whether cell i's last execution has its reply (a number in the prompt)."""
        return isinstance(self.js("return Jupyter.notebook.get_cell(arguments[0]).input_prompt_number;", i), int)

    def run(self, i, timeout=60):
        """Executes cell i and waits for its end; returns its outputs."""
        self.execute(i)
        wait("cell %d to finish" % i, lambda: self.done(i), timeout=timeout)
        return self.outputs(i)

    def outputs(self, i):
        """Cell i's outputs as the notebook holds them (nbformat JSON)."""
        return self.js("return Jupyter.notebook.get_cell(arguments[0]).output_area.toJSON();", i)

    def text(self, i):
        """The text/plain (or stream text) of cell i's outputs, joined."""
        parts = []
        for o in self.outputs(i):
            if o.get("output_type") == "stream":
                parts.append(o.get("text", ""))
            elif o.get("output_type") == "error":
                parts.append("%s: %s" % (o.get("ename"), o.get("evalue")))
            else:
                t = o.get("data", {}).get("text/plain", "")
                parts.append("".join(t) if isinstance(t, list) else t)
        return "\n".join(parts)

    def cell(self, i):
        """The cell's DOM element."""
        return self.js("return Jupyter.notebook.get_cell(arguments[0]).element[0];", i)

    def output_el(self, i):
        return self.js("return Jupyter.notebook.get_cell(arguments[0]).element.find('.output_wrapper')[0];", i)

    def shutdown(self):
        """Shuts the notebook's kernel down (the server would do it too)."""
        try:
            self.js("Jupyter.notebook.session.delete();")
            time.sleep(1)
        except WebDriverException:
            pass
