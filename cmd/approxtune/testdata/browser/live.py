"""Live figures in the classic Notebook.

The notebook's first cell sets up a small evaluate sweep, the second runs
it. While it runs, the cell's output is captured: its screenshot every
~0.5 s, the figures (<img> data URIs) in its DOM every ~0.1 s. There must be at
least three distinct figure states; after the end, the live figures must be
what 'plot speedup' and 'plot error' draw.
"""
import base64
import os
import time

from common import Classic, check, data_uri, digest, fail, log, main, save, shot


def body(drv):
    nb = Classic(drv, os.environ["ATUNE_NOTEBOOK"])
    out = nb.run(0)
    check(not any(o.get("output_type") == "error" for o in out), "setup cell: %s" % nb.text(0))

    def figures():
        """The live display's figures as (MIME type, data) per <img>."""
        srcs = drv.execute_script(
            "return Array.prototype.map.call(Jupyter.notebook.get_cell(1).element"
            ".find('.output_area img'), function (i) { return i.getAttribute('src'); });")
        return [data_uri(s) for s in srcs]

    nb.execute(1)
    t0 = time.time()
    shots, states, samples = {}, {}, []  # digest -> PNG; figures' digest -> sample index
    last_shot = 0.0
    while not nb.done(1):
        if time.time() - t0 > 90:
            fail("the evaluate cell did not end in 90 s: %s" % nb.text(1))
        # A screenshot takes a good part of a second on a loaded machine:
        # one every 0.5 s at most, and the figures (cheap to read) looked
        # at every 0.1 s, so that no state of theirs is missed between two.
        if time.time() - last_shot >= 0.5:
            last_shot = time.time()
            el = nb.output_el(1)
            if el is not None and el.size["height"] > 0:
                png = el.screenshot_as_png
                shots.setdefault(digest(png), png)
        figs = figures()
        if figs:
            key = digest(b"".join(d or b"" for _, d in figs))
            if key not in states:
                states[key] = len(samples)
                samples.append((nb.cell(1).screenshot_as_png, figs))
        time.sleep(0.1)
    elapsed = time.time() - t0
    log("the sweep ran %.1f s: %d distinct screenshots, %d distinct figure states" % (elapsed, len(shots), len(states)))
    check(len(shots) >= 3, "%d distinct screenshots of the running cell, want at least 3" % len(shots))
    check(len(states) >= 3, "%d distinct figure states while the sweep ran, want at least 3" % len(states))
    for mime, data in (samples[0][1] if samples else []):
        check(mime in ("image/svg+xml", "image/png") and data, "a live figure is not an SVG or PNG data URI: %s" % mime)
    if samples:
        save(samples[len(samples) // 2][0], "live-midsweep.png")

    outs = nb.outputs(1)
    check(not any(o.get("output_type") == "error" for o in outs), "the evaluate cell failed: %s" % nb.text(1))
    final = figures()
    shot(nb.cell(1), "live-final.png")
    check(len(final) >= 2, "the final live display has %d figures, want speed-up and error" % len(final))
    live = [d for _, d in final]
    # The display's own image entries (the notebook keeps them with the output).
    disp = [o for o in outs if o.get("output_type") == "display_data"]
    check(len(disp) == 1, "%d display_data outputs in the evaluate cell, want one live display" % len(disp))

    # Front ends that show no HTML get the figures as image entries.
    if disp:
        d = disp[0].get("data", {})
        svg = d.get("image/svg+xml", "")
        svg = "".join(svg) if isinstance(svg, list) else svg
        check("<svg" in svg, "the live display has no image/svg+xml figure: %s" % sorted(d))
        png = base64.b64decode(d.get("image/png", ""))
        check(png.startswith(b"\x89PNG"), "the live display has no image/png figure: %s" % sorted(d))

    # The final live figures are what the plot commands draw.
    for cmd in ("plot speedup", "plot error"):
        c = nb.append(cmd)
        po = nb.run(c)
        data = [o.get("data", {}) for o in po if "data" in o]
        if not check(data and "image/svg+xml" in data[0], "%s: no SVG output: %s" % (cmd, nb.text(c))):
            continue
        svg = data[0]["image/svg+xml"]
        svg = "".join(svg) if isinstance(svg, list) else svg
        check(svg.encode() in live, "the final live figures are not what '%s' draws (live: %s; %s: %s)"
              % (cmd, [digest(d) for d in live], cmd, digest(svg)))
    nb.shutdown()


main(body)
