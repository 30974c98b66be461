#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The web UI's policy page as a user drives it, in headless Chromium over the
DevTools protocol (cdp.py); run by tests/ui/test_ui.c.

    policy_form.py CHROMIUM URL TOKEN SPEC

Opens URL#/policy and checks that, without a token, the switch button is
disabled and the page says it is read-only; types a wrong token and SPEC and
submits: the page must show loomd's refusal ("wrong token"); types TOKEN and
submits again: the page must say "Switched: OLD → SPEC" and, within the next
polls, show SPEC as the policy in use. Fails on any console call or uncaught
exception of the page (the refused request's own network error, which the
browser logs by itself, is allowed). Exits 0, or 1 saying what was wrong."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402


def evaluate(ws, expr):
    r = ws.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
    if "exceptionDetails" in r:
        raise RuntimeError(f"evaluating {expr!r}: {r['exceptionDetails'].get('text')}")
    return r.get("result", {}).get("value")


def wait_for(ws, expr, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if evaluate(ws, expr):
                return
        except RuntimeError:
            pass  # the document is being replaced
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def type_into(ws, elem_id, text):
    evaluate(ws, f"""(() => {{ const e = document.getElementById({json.dumps(elem_id)});
        e.value = {json.dumps(text)}; e.dispatchEvent(new Event('input')); return true; }})()""")


def page_problems(ws):
    out = []
    for m in ws.events:
        if m["method"] == "Runtime.consoleAPICalled":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in m["params"]["args"])
            out.append(f"console.{m['params']['type']}: {args}")
        elif m["method"] == "Runtime.exceptionThrown":
            d = m["params"]["exceptionDetails"]
            out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif m["method"] == "Log.entryAdded" and m["params"]["entry"]["source"] != "network":
            out.append(f"log: {m['params']['entry']['text']}")
    return out


def main():
    if len(sys.argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    chromium, url, token, spec = sys.argv[1:]
    browser = Browser(chromium)
    try:
        tab_id, ws = browser.tab()
        ws.call("Runtime.enable")
        ws.call("Log.enable")
        ws.call("Page.navigate", {"url": url.rstrip("/") + "/#/policy"})
        wait_for(ws, "document.body && document.body.dataset.page === 'policy'", "the policy page")
        before = evaluate(ws, "document.querySelector('.card .v').textContent")
        if not evaluate(ws, "document.getElementById('switch').disabled"):
            raise RuntimeError("the switch button is enabled without a token")
        if "Read-only" not in evaluate(ws, "document.getElementById('policy-result').textContent"):
            raise RuntimeError("the page does not say it is read-only without a token")

        type_into(ws, "spec", spec)
        type_into(ws, "token", "0" * 64)
        evaluate(ws, "document.getElementById('switch').click(), true")
        wait_for(ws, "document.getElementById('policy-result').textContent.includes('wrong token')",
                 "the refusal of a wrong token")

        type_into(ws, "token", token)
        evaluate(ws, "document.getElementById('switch').click(), true")
        want = f"Switched: {before} → {spec}"
        wait_for(ws, f"document.getElementById('policy-result').textContent === {json.dumps(want)}",
                 f"'{want}'")
        wait_for(ws, f"document.querySelector('.card .v').textContent === {json.dumps(spec)}",
                 f"{spec} shown as the policy in use")
        problems = page_problems(ws)
        if problems:
            raise RuntimeError("the page wrote to the console: " + "; ".join(problems))
        browser.close_tab(tab_id)
        print(f"policy_form: {before} -> {spec} through the page")
        return 0
    except (RuntimeError, OSError) as e:
        sys.stderr.write(f"policy_form: {e}\n")
        return 1
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
