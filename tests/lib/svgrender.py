# SPDX-License-Identifier: MIT
# Renders an SVG in headless Chromium (Debian's `chromium`) and reports what
# the browser laid out: the size of the drawing and the box of every text
# element, and takes a screenshot. Used by the flame graph and timeline
# tests to check that title, axis and labels render inside the picture.
"""Render stackdump's SVGs in a real browser.

    boxes = layout("graph.svg")          # {"w", "h", "texts": [{...}], "frames": [...]}
    png = screenshot("graph.svg", "graph.png")
"""

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

_PROBE = r"""
<pre id="sd-result"></pre><script>
function sdProbe(){
  var s = document.querySelector('svg'), vb = s.viewBox.baseVal;
  var out = {w: vb && vb.width ? vb.width : s.width.baseVal.value,
             h: vb && vb.height ? vb.height : s.height.baseVal.value, texts: [], frames: []};
  s.querySelectorAll('text').forEach(function(t) {
    var b = t.getBBox(), cs = getComputedStyle(t);
    out.texts.push({id: t.id || null, cls: t.getAttribute('class'),
                    parent: t.parentNode.getAttribute('class'), text: t.textContent,
                    x: b.x, y: b.y, w: b.width, h: b.height,
                    shown: cs.display !== 'none' && cs.visibility !== 'hidden'});
  });
  s.querySelectorAll('g.f').forEach(function(g) {
    var r = g.querySelector('rect'), t = g.querySelector('text');
    if (!r || !t) return;
    var rb = r.getBBox(), tb = t.getBBox();
    out.frames.push({rx: rb.x, rw: rb.width, tx: tb.x, tw: tb.width, text: t.textContent,
                     shown: getComputedStyle(g).display !== 'none',
                     cls: g.getAttribute('class'), fill: getComputedStyle(r).fill,
                     title: (g.querySelector('title') || {}).textContent || ''});
  });
  document.getElementById('sd-result').textContent = JSON.stringify(out);
}
window.addEventListener('load', function() { setTimeout(sdProbe, 300); });
</script>
"""


def chromium():
    """The browser binary; raises when it is missing (tests must not skip)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    raise RuntimeError("chromium not installed (Debian package 'chromium', in .ci/deps)")


def _run(args, timeout=180):
    # The sandbox needs user namespaces a CI container may lack; the page
    # is our own file.
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
           "--hide-scrollbars", "--no-first-run"] + args
    with tempfile.TemporaryDirectory(prefix="sd-chromium-") as profile:
        p = subprocess.run(cmd + ["--user-data-dir=" + profile], capture_output=True,
                           text=True, timeout=timeout)
    return p


def layout(svg_path):
    """Inline the SVG in a page, let its scripts run, and return the
    browser's layout of it (see _PROBE)."""
    with open(svg_path, encoding="utf-8") as f:
        svg = f.read()
    svg = re.sub(r"^<\?xml[^>]*\?>", "", svg.lstrip())
    page = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head>"
            "<body style=\"margin:0\">" + svg + _PROBE + "</body></html>")
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False,
                                     encoding="utf-8") as f:
        f.write(page)
        html = f.name
    try:
        p = _run(["--virtual-time-budget=5000", "--dump-dom", "file://" + html])
    finally:
        os.unlink(html)
    m = re.search(r'<pre id="sd-result">([^<]*)</pre>', p.stdout)
    if not m or not m.group(1):
        raise AssertionError("chromium laid out nothing (rc %d): %s" % (p.returncode,
                                                                        p.stderr[-2000:]))
    text = (m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&amp;", "&"))
    return json.loads(text)


def png_info(path):
    """(width, height, distinct byte values of the image data) of a PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    return width, height, len(set(raw))


def screenshot(svg_path, png_path, width, height):
    """A screenshot of the SVG file as Chromium shows it, WIDTHxHEIGHT."""
    if os.path.exists(png_path):
        os.unlink(png_path)
    p = _run(["--window-size=%d,%d" % (width, height), "--screenshot=" + png_path,
              "file://" + os.path.abspath(svg_path)])
    if not os.path.exists(png_path):
        raise AssertionError("no screenshot (rc %d): %s" % (p.returncode, p.stderr[-2000:]))
    return png_info(png_path)
