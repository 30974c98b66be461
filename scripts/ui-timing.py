#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Measures loomd's web UI in headless Chromium over the DevTools protocol:
each page's first render (the page's own mark, data-first-render-ms on
<html>: performance.now() when its first API answers are drawn), its first
contentful paint, and the bytes it loaded (the documents and every API
answer up to then, uncompressed bodies).

    scripts/ui-timing.py URL [RUNS]      e.g. http://127.0.0.1:9464/

Runs each page (overview, agents, policy, and #/job/ID pages in
$UI_TIMING_PAGES if set, space-separated hashes) RUNS times (default 5) in
a fresh tab and prints the median and the worst. Needs chromium; Python 3
standard library only (tests/ui/cdp.py)."""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ui"))
from cdp import Browser  # noqa: E402


MEASURE = """(() => {
  const fr = document.documentElement.dataset.firstRenderMs;
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const upTo = fr ? Number(fr) : Infinity;
  let bytes = nav ? nav.decodedBodySize : 0, n = 1;
  for (const r of res) if (r.responseEnd <= upTo + 1) { bytes += r.decodedBodySize; n++; }
  return JSON.stringify({fr: fr ? Number(fr) : null, fcp: fcp ? fcp.startTime : null, bytes, n});
})()"""


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    base = sys.argv[1].rstrip("/") + "/"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    pages = ["#/", "#/agents", "#/policy"] + os.environ.get("UI_TIMING_PAGES", "").split()
    browser = Browser()
    try:
        for page in pages:
            frs, fcps, weights = [], [], []
            for _ in range(runs):
                tab_id, ws = browser.tab()
                ws.call("Network.enable")
                ws.call("Network.setCacheDisabled", {"cacheDisabled": True})
                ws.call("Page.navigate", {"url": base + page})
                deadline = time.time() + 10
                m = {}
                while time.time() < deadline:
                    r = ws.call("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True})
                    if "value" not in r.get("result", {}):
                        time.sleep(0.05)  # the new document is not there yet
                        continue
                    m = json.loads(r["result"]["value"])
                    if m["fr"] is not None and m["fcp"] is not None:
                        break
                    time.sleep(0.05)
                browser.close_tab(tab_id)
                if m.get("fr") is None:
                    raise RuntimeError(f"{page}: never rendered")
                frs.append(m["fr"])
                fcps.append(m["fcp"])
                weights.append(m["bytes"])
            print(f"{page:12} first render median {statistics.median(frs):6.0f} ms "
                  f"(worst {max(frs):.0f}), first contentful paint median "
                  f"{statistics.median(fcps):6.0f} ms, {statistics.median(weights):.0f} bytes "
                  f"loaded by then")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
