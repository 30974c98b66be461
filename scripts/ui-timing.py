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
standard library only (a minimal WebSocket client)."""

import base64
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WS:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("no websocket upgrade: " + head.decode(errors="replace"))
        self.id = 0

    def _recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise RuntimeError("websocket closed")
            b += c
        return b

    def send(self, obj):
        data = json.dumps(obj).encode()
        hdr = bytes([0x81])
        n = len(data)
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            msg += payload
            if b0 & 0x80:
                return json.loads(msg)

    def call(self, method, params=None):
        self.id += 1
        self.send({"id": self.id, "method": method, "params": params or {}})
        while True:
            m = self.recv()
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})


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
    prof = tempfile.mkdtemp(prefix="ui-timing-")
    port = 9333
    chrome = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                               "--disable-dev-shm-usage", "--no-first-run",
                               f"--user-data-dir={prof}", f"--remote-debugging-port={port}",
                               "--window-size=1280,900", "about:blank"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        for page in pages:
            frs, fcps, weights = [], [], []
            for _ in range(runs):
                req = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?about:blank",
                                             method="PUT")
                tab = json.load(urllib.request.urlopen(req, timeout=10))
                ws = WS(tab["webSocketDebuggerUrl"])
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
                urllib.request.urlopen(f"http://127.0.0.1:{port}/json/close/{tab['id']}", timeout=10)
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
        chrome.terminate()
        chrome.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
