"""Open a Snakemake report in headless Chromium and look at what it shows.

The report is one HTML page whose app shows a result when a reader clicks it. :func:`inspect_report`
loads a copy of the page with a script appended that does what the clicks do (``app.setView``, as the
report's own result buttons call it) for every result in turn: an image is shown in the app and its
``naturalWidth`` read once it loaded (0: a broken image); an HTML table is shown in the app's frame and
its rows and non-empty cells counted from the page the frame shows. The counts go into a ``<pre>``
that ``chromium --dump-dom`` prints; a second load leaves the first table on screen for a screenshot.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--virtual-time-budget=20000",
    "--window-size=1400,1000",
]

PROBE = """
<script>
function aiaynShow(path) {
  const entry = results[path];
  const kind = entry.mime_type.startsWith("image/") ? "img" : "html";
  app.setView({content: kind, contentPath: entry.data_uri, resultPath: path});
  return kind;
}
async function aiaynProbe() {
  const seen = {tables: {}, images: {}, errors: []};
  for (const path of Object.keys(results)) {
    const kind = aiaynShow(path);
    await new Promise(done => setTimeout(done, 300));
    if (kind === "img") {
      const img = [...document.querySelectorAll("#app img")].find(i => \
i.getAttribute("src") === results[path].data_uri);
      if (!img) { seen.errors.push("not shown: " + path); continue; }
      if (!img.complete) await new Promise(done => { img.onload = img.onerror = done; });
      seen.images[path] = img.naturalWidth;
    } else {
      const frame = document.querySelector("#app iframe");
      if (!frame || frame.getAttribute("src") !== results[path].data_uri) { \
seen.errors.push("not shown: " + path); continue; }
      const page = new DOMParser().parseFromString(await (await fetch(results[path].data_uri)).text(), "text/html");
      seen.tables[path] = [...page.querySelectorAll("tbody td")].filter(td => td.textContent.trim()).length;
    }
  }
  const out = document.createElement("pre");
  out.id = "aiayn-probe";
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
}
window.addEventListener("load", () => setTimeout(SHOW, 500));
</script>
"""


def find_chromium() -> str | None:
    """The Chromium binary on PATH (Debian's ``chromium``, or another common name), or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _with_probe(report: Path, target: Path, call: str) -> Path:
    head, tag, tail = report.read_text(encoding="utf-8").rpartition("</body>")  # the page's own, not one in its scripts
    target.write_text(head + PROBE.replace("SHOW", call) + tag + tail, encoding="utf-8")
    return target


def _chromium(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *FLAGS, *args], capture_output=True, text=True, timeout=180)


def inspect_report(binary: str, report: Path, screenshot: Path) -> dict:
    """``{"tables": {path: non-empty cells}, "images": {path: naturalWidth}, "errors": [...]}`` for every
    result of the report, as Chromium shows them; writes a screenshot of the first table shown."""
    probe = _with_probe(report, report.with_name("probe.html"), "aiaynProbe")
    result = _chromium(binary, "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="aiayn-probe">(.*?)</pre>', result.stdout, re.S)
    if not found:
        raise AssertionError(f"the report's probe did not finish:\n{result.stderr[-3000:]}")
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    first = next((p for p in json.loads(_results_keys(report)) if not p.endswith(".png")), None)
    show = _with_probe(report, report.with_name("show.html"), f"() => aiaynShow({json.dumps(first)})")
    _chromium(binary, f"--screenshot={screenshot}", show.as_uri())
    return seen


def _results_keys(report: Path) -> str:
    """The paths of the report's results, in its order (from its ``var categories`` script)."""
    text = report.read_text(encoding="utf-8")
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", text).group(1))
    return json.dumps([path for sub in categories.values() for paths in sub.values() for path in paths])
