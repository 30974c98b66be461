#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Headless Chromium over the DevTools protocol, Python 3 standard library
only: a minimal WebSocket client (WS) and a browser with a fresh profile
(Browser). Used by tests/ui/policy_form.py and scripts/ui-timing.py."""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
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
        self.events = []  # every event received while waiting for answers

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
            if "method" in m:
                self.events.append(m)
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})



class Browser:
    """chromium --headless=new with a fresh profile; the DevTools port it
    picked is read from the profile's DevToolsActivePort file."""

    def __init__(self, chromium="chromium", timeout=30):
        self.prof = tempfile.mkdtemp(prefix="loom-cdp-")
        self.proc = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                                      "--disable-dev-shm-usage", "--no-first-run",
                                      "--no-default-browser-check", "--disable-extensions",
                                      "--disable-background-networking", "--disable-sync",
                                      f"--user-data-dir={self.prof}",
                                      "--remote-debugging-port=0", "--window-size=1280,900",
                                      "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=dict(os.environ, HOME=self.prof))
        deadline = time.time() + timeout
        path = os.path.join(self.prof, "DevToolsActivePort")
        self.port = None
        while time.time() < deadline and self.proc.poll() is None:
            try:
                with open(path) as f:
                    first = f.readline().strip()
                if first:
                    self.port = int(first)
                    break
            except OSError:
                pass
            time.sleep(0.05)
        if self.port is None:
            self.close()
            raise RuntimeError("chromium did not open its DevTools port")

    def tab(self):
        """A new tab: (its id, a WS to it)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank",
                                     method="PUT")
        t = json.load(urllib.request.urlopen(req, timeout=10))
        return t["id"], WS(t["webSocketDebuggerUrl"])

    def close_tab(self, tab_id):
        urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{tab_id}", timeout=10)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.prof, ignore_errors=True)
