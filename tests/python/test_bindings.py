#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Python bindings of libloom (bindings/python/loom.py) against a real loomd.

Starts loomd ($LOOMD) on a Unix socket in a temporary folder and drives it
through every binding: connecting (and failing to: no socket, refused, bad
address, silent server), registering jobs, announcing flows (batches with a
partial refusal, sockets), coflow and job done, unregistering, the errors of
bad input (LoomError subclasses with errno and libloom's message), the job
context manager, handles freed when dropped, the ctypes structs' layout
against the C compiler's ($LOOM_ABI_LAYOUT), the library search; then runs
the two-stage shuffle example (examples/python/shuffle.py) between Python
processes and checks with loomctl ($LOOMCTL) that loomd saw both coflows
complete. Run from meson (tests/python/meson.build); exits 77 (skipped)
where this python has no ctypes.
"""

import errno
import gc
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

try:
    import ctypes
except ImportError:  # a python built without libffi: nothing here can run
    print("python3 has no ctypes: the bindings cannot load", file=sys.stderr)
    sys.exit(77)

SRCDIR = os.environ.get("LOOM_SRCDIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
                            __file__)))))
sys.path.insert(0, os.path.join(SRCDIR, "bindings", "python"))
import loom  # noqa: E402

EXAMPLE = os.path.join(SRCDIR, "examples", "python", "shuffle.py")
HOSTS = 8


def need_env(name):
    v = os.environ.get(name)
    if not v or not os.path.exists(v):
        raise RuntimeError("$%s (%r) must name a file of this build (run from meson)" % (name, v))
    return v


def wait_until(what, cond, timeout=10.0):
    """Polls cond() until true, bounded."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("%s: not within %.0f s" % (what, timeout))
        time.sleep(0.02)


def die_with_test():
    """In a child before exec: killed when the test process dies (no loomd left behind)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Loomd:
    """A loomd of the test's own in a private folder, with its admin socket for loomctl."""

    def __init__(self):
        self.loomd = need_env("LOOMD")
        self.loomctl = need_env("LOOMCTL")
        self.dir = tempfile.mkdtemp(prefix="loom-py-")
        self.sock = os.path.join(self.dir, "loomd.sock")
        self.admin = os.path.join(self.dir, "admin.sock")
        self.log = os.path.join(self.dir, "loomd.log")
        self.address = "unix:" + self.sock
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.loomd, "-f", "-c", "/dev/null", "-o", "listen_unix=" + self.sock,
                 "-o", "admin_socket=" + self.admin, "-o", "journal=", "-o", "listen_tcp=",
                 "-o", "metrics=", "-o", "hosts=%d" % HOSTS],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=die_with_test)
        end = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("loomd exited %d:\n%s" % (self.proc.returncode,
                                                             self.log_text()))
            r = self.ctl_run("stats")
            if r.returncode == 0:
                break
            if time.monotonic() > end:
                self.proc.kill()
                raise RuntimeError("loomd's admin socket did not answer in 10 s:\n%s"
                                   % self.log_text())
            time.sleep(0.02)

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()[-8000:]

    def ctl_run(self, *args):
        return subprocess.run([self.loomctl, "--socket", self.admin, "--json"] + list(args),
                              capture_output=True, text=True, timeout=15)

    def ctl(self, *args):
        """loomctl --json ARGS, which must succeed; its result."""
        r = self.ctl_run(*args)
        if r.returncode != 0:
            raise AssertionError("loomctl %s exited %d: %s" % (" ".join(args), r.returncode,
                                                               r.stderr))
        return json.loads(r.stdout)

    def stat(self, key):
        return self.ctl("stats")[key]

    def job_ids(self):
        return {j["id"] for j in self.ctl("jobs")}

    def job(self, job_id):
        return {j["id"]: j for j in self.ctl("jobs")}.get(job_id)

    def wait_job_done(self, job_id):
        """Waits (bounded) until loomd lists the job done: its pass after the request sees it."""
        wait_until("loomd lists job %d done" % job_id,
                   lambda: (self.job(job_id) or {}).get("state") == "done")
        return self.job(job_id)

    def stop(self):
        """SIGTERM; loomd must exit 0 within 10 s. Returns what was wrong, or None."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    return "loomd did not stop within 10 s of SIGTERM"
            if self.proc.returncode != 0:
                return "loomd exited %d" % self.proc.returncode
            return None
        finally:
            if self.proc.returncode != 0:
                sys.stderr.write("--- loomd's log:\n%s--- end\n" % self.log_text())
            shutil.rmtree(self.dir, ignore_errors=True)


def tcp_pair():
    """A connected TCP pair on 127.0.0.1: (client end, server end)."""
    with socket.create_server(("127.0.0.1", 0)) as ls:
        c = socket.create_connection(ls.getsockname())
        s, _ = ls.accept()
    return c, s


def own_fds():
    return len(os.listdir("/proc/self/fd"))


class Bindings(unittest.TestCase):
    D = None

    @classmethod
    def setUpClass(cls):
        cls.D = Loomd()

    @classmethod
    def tearDownClass(cls):
        problem = cls.D.stop()
        if problem:
            raise AssertionError(problem)

    def setUp(self):
        self.c = loom.connect(self.D.address, name=self.id().split(".")[-1])
        self.addCleanup(self.c.close)

    def assertLoomError(self, cls, err, fn, *args, **kw):
        with self.assertRaises(cls) as cm:
            fn(*args, **kw)
        e = cm.exception
        self.assertIsInstance(e, loom.LoomError)
        self.assertEqual(e.errno, err, str(e))
        self.assertTrue(e.message and e.message != "no error", repr(e))
        return e

    # ---- the API as a whole ---------------------------------------------------------------------

    def test_every_c_call_has_a_binding(self):
        with open(os.path.join(SRCDIR, "controlplane", "client", "loom.h")) as f:
            header = f.read()
        calls = set(re.findall(r"\bloom_client_(\w+)\s*\(", header))
        self.assertGreaterEqual(len(calls), 12)
        for name in sorted(calls):
            self.assertTrue(callable(getattr(loom, name, None)) or
                            callable(getattr(loom.Client, name, None)),
                            "loom_client_%s has no Python counterpart" % name)
        structs = set(re.findall(r"^struct loom_client_(\w+) \{", header, re.M))
        for name in sorted(structs):
            self.assertIn("loom_client_" + name, loom.C_STRUCTS)
            if name != "options":  # options are connect()'s keyword arguments
                self.assertTrue(hasattr(loom, name.capitalize()),
                                "struct loom_client_%s has no loom.%s" % (name,
                                                                         name.capitalize()))

    def test_struct_layout_matches_c(self):
        out = subprocess.run([need_env("LOOM_ABI_LAYOUT")], capture_output=True, text=True,
                             check=True, timeout=10).stdout
        seen = set()
        for line in out.splitlines():
            name, a, b = line.split()
            if a == "size":
                self.assertEqual(ctypes.sizeof(loom.C_STRUCTS[name]), int(b), name)
                seen.add(name)
                continue
            struct, fld = name.split(".")
            desc = getattr(loom.C_STRUCTS[struct], fld)
            self.assertEqual((desc.offset, desc.size), (int(a), int(b)), name)
        self.assertEqual(seen, set(loom.C_STRUCTS))

    def test_library_search(self):
        env = dict(os.environ)
        env.pop(loom.ENV_LIBLOOM, None)
        code = "import loom; print(loom.library_path())"
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=30, cwd=os.path.join(SRCDIR, "bindings", "python"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.join(
            os.environ["LOOM_BUILDDIR"], "controlplane", "client", "libloom.so"))
        # $LOOM_LIBLOOM is the only place tried when set; a clear error when it is wrong
        env[loom.ENV_LIBLOOM] = os.path.join(self.D.dir, "nowhere", "libloom.so")
        code = ("import loom, errno\n"
                "try:\n"
                "    loom.connect()\n"
                "except loom.LibraryNotFoundError as e:\n"
                "    assert e.errno == errno.ENOENT\n"
                "    print(e.message)\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=30, cwd=os.path.join(SRCDIR, "bindings", "python"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("libloom not found", r.stdout)
        self.assertIn("$LOOM_LIBLOOM: %s does not exist" % env[loom.ENV_LIBLOOM], r.stdout)
        # a file that is not a shared object
        env[loom.ENV_LIBLOOM] = self.D.log
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=30, cwd=os.path.join(SRCDIR, "bindings", "python"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.D.log, r.stdout)

    def test_error_classes(self):
        e = loom.ExistsError(errno.EEXIST, "job 1 is already registered")
        self.assertIsInstance(e, OSError)
        self.assertEqual((e.errno, e.message, e.strerror),
                         (errno.EEXIST, "job 1 is already registered",
                          "job 1 is already registered"))
        self.assertEqual(str(e), "job 1 is already registered [EEXIST]")
        self.assertTrue(issubclass(loom.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(loom.LoomTimeoutError, TimeoutError))
        self.assertTrue(issubclass(loom.ConnectionFailedError, ConnectionError))

    # ---- connecting -----------------------------------------------------------------------------

    def test_connect(self):
        self.assertEqual(self.c.address(), self.D.address)
        self.assertGreaterEqual(self.c.version(), 1)
        self.assertIn(self.D.address, repr(self.c))
        # the other address forms: a bare path
        with loom.Client(self.D.sock, timeout_ms=2000) as c2:
            self.assertEqual(c2.address(), self.D.address)
        self.assertTrue(c2.closed)
        self.assertLoomError(loom.ClosedError, errno.EBADF, c2.version)
        self.assertLoomError(loom.ClosedError, errno.EBADF, c2.job_done, 1)
        c2.close()  # idempotent
        self.assertEqual(repr(c2), "<loom.Client closed>")

    def test_connect_from_environment(self):
        old = os.environ.get(loom.ENV_CONTROLLER)
        os.environ[loom.ENV_CONTROLLER] = self.D.address
        try:
            with loom.connect() as c2:
                self.assertEqual(c2.address(), self.D.address)
        finally:
            if old is None:
                del os.environ[loom.ENV_CONTROLLER]
            else:
                os.environ[loom.ENV_CONTROLLER] = old

    def test_connect_failures(self):
        nowhere = os.path.join(self.D.dir, "nowhere.sock")
        e = self.assertLoomError(loom.ConnectionFailedError, errno.ENOENT, loom.connect,
                                 "unix:" + nowhere)
        self.assertIn("connect unix:%s" % nowhere, e.message)
        self.assertEqual(loom.strerror(), e.message)
        # a port nobody listens on: bound, never listening
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            self.assertLoomError(loom.ConnectionFailedError, errno.ECONNREFUSED, loom.connect,
                                 "tcp:127.0.0.1:%d" % port)
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.connect,
                             "tcp:127.0.0.1")
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.connect,
                             "[::1]:0")
        self.assertLoomError(loom.LoomError, errno.ENAMETOOLONG, loom.connect,
                             "unix:/" + "x" * 200)
        e = self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.connect,
                                 self.D.address, timeout_ms=-5)
        self.assertIn("-5", e.message)
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.connect,
                             self.D.address, timeout_ms=1 << 40)
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.connect,
                             self.D.address, name="a\0b")
        # a server that accepts and never answers the Hello
        path = os.path.join(self.D.dir, "silent.sock")
        with socket.socket(socket.AF_UNIX) as silent:
            silent.bind(path)
            silent.listen(4)
            self.assertLoomError(loom.LoomTimeoutError, errno.ETIMEDOUT, loom.connect,
                                 "unix:" + path, timeout_ms=200)

    def test_strerror_is_per_thread(self):
        self.assertLoomError(loom.NotFoundError, errno.ENOENT, self.c.job_done, 990001)
        mine = loom.strerror()
        other = []

        def fail_elsewhere():
            try:
                self.c.job_unregister(990002)
            except loom.NotFoundError as e:
                other.append((e.message, loom.strerror()))

        t = threading.Thread(target=fail_elsewhere)
        t.start()
        t.join(30)
        self.assertEqual(len(other), 1)
        self.assertEqual(other[0][0], other[0][1])
        self.assertNotEqual(other[0][0], mine)
        self.assertEqual(loom.strerror(), mine)

    # ---- jobs -----------------------------------------------------------------------------------

    def test_job_lifecycle(self):
        t = loom.Tuple("10.0.0.1", 40000, "10.0.0.2", 80)
        job = loom.Job(
            id=1001, weight=2.5, name="lifecycle",
            coflows=[loom.Coflow(10011, flows=[loom.Flow(0, 1, 1000, tuple=t),
                                               loom.Flow(1, 2, 2000)]),
                     loom.Coflow(10012, release_offset_ns=1000, expected_flows=3)],
            edges=[loom.Edge(10011, 10012, delay_ns=5)])
        self.c.job_register(job)
        jobs = {j["id"]: j for j in self.D.ctl("jobs")}
        self.assertEqual(jobs[1001]["name"], "lifecycle")
        self.assertEqual(jobs[1001]["weight"], 2.5)
        self.assertEqual(jobs[1001]["coflows"], 2)
        cfs = {c["id"]: c for c in self.D.ctl("coflows", "1001")}
        self.assertEqual(cfs[10011]["flows"], 2)
        self.assertEqual(cfs[10011]["bytes_expected"], 3000)
        e = self.assertLoomError(loom.ExistsError, errno.EEXIST, self.c.job_register, job)
        self.assertIn("1001", e.message)
        self.c.coflow_done(10012)
        self.assertLoomError(loom.AlreadyDoneError, errno.EALREADY, self.c.coflow_done, 10012)
        self.c.job_done(1001)
        self.D.wait_job_done(1001)
        self.assertLoomError(loom.AlreadyDoneError, errno.EALREADY, self.c.job_done, 1001)
        self.c.job_unregister(1001)
        self.assertNotIn(1001, self.D.job_ids())
        self.assertLoomError(loom.NotFoundError, errno.ENOENT, self.c.job_unregister, 1001)

    def test_refused_registrations(self):
        cyc = loom.Job(1101, coflows=[loom.Coflow(11011), loom.Coflow(11012)],
                       edges=[loom.Edge(11011, 11012), loom.Edge(11012, 11011)])
        self.assertLoomError(loom.CycleError, errno.ELOOP, self.c.job_register, cyc)
        far = loom.Job(1102, coflows=[loom.Coflow(11021, flows=[loom.Flow(0, HOSTS)])])
        e = self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.job_register,
                                 far)
        self.assertIn("out of range", e.message)
        # libloom's own check: by_address without a tuple
        e = self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.job_register,
                                 loom.Job(1103, coflows=[loom.Coflow(
                                     11031, flows=[loom.Flow(by_address=True)])]))
        self.assertIn("by_address needs a 5-tuple", e.message)
        # what Python checks before C sees it (ctypes would wrap these silently)
        for bad in (loom.Job(-1), loom.Job(1 << 64), loom.Job("7"),
                    loom.Job(1104, name="nul\0here"),
                    loom.Job(1105, coflows=[loom.Coflow(11051, expected_flows=1 << 32)]),
                    loom.Job(1106, coflows=[loom.Coflow(11061, flows=[loom.Flow(-1, 0)])]),
                    loom.Job(1107, coflows=["not a coflow"]),
                    loom.Job(1108, edges=[loom.Edge(1, -2)]),
                    loom.Job(1109, weight="heavy")):
            self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.job_register,
                                 bad)
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.job_register,
                             "job")
        for bad in (("10.0.0.1", 1, "::1", 2), ("10.0.0.1", 70000, "10.0.0.2", 2),
                    ("not an address", 1, "10.0.0.2", 2)):
            self.assertRaises(loom.InvalidArgumentError, loom.Tuple, *bad)
        self.assertFalse({1101, 1102, 1103, 1104} & self.D.job_ids())

    def test_unknown_ids(self):
        for fn in (self.c.coflow_done, self.c.job_done, self.c.job_unregister):
            e = self.assertLoomError(loom.NotFoundError, errno.ENOENT, fn, 987654321)
            self.assertIn("987654321", e.message)
        for fn in (self.c.coflow_done, self.c.job_done, self.c.job_unregister):
            self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, fn, -1)

    def test_job_extend(self):
        self.c.job_register(loom.Job(1101, coflows=[loom.Coflow(11011)]))
        self.addCleanup(self.c.job_unregister, 1101)
        self.c.job_extend(loom.Job(1101, coflows=[loom.Coflow(11012)],
                                   edges=[loom.Edge(11011, 11012)]))
        # the edge's child was registered before: refused, nothing added
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.job_extend,
                             loom.Job(1101, coflows=[loom.Coflow(11013)],
                                      edges=[loom.Edge(11013, 11012)]))
        self.assertLoomError(loom.NotFoundError, errno.ENOENT, self.c.job_extend,
                             loom.Job(1199, coflows=[loom.Coflow(11991)]))
        # the job now has both coflows: finishing them finishes it
        self.c.coflow_done(11011)
        self.c.coflow_done(11012)
        self.assertLoomError(loom.AlreadyDoneError, errno.EALREADY, self.c.job_extend,
                             loom.Job(1101, coflows=[loom.Coflow(11014)]))

    # ---- flows ----------------------------------------------------------------------------------

    def test_flows_announce(self):
        self.c.job_register(loom.Job(1201, coflows=[loom.Coflow(12011)]))
        self.addCleanup(self.c.job_unregister, 1201)
        before = self.D.stat("flows_announced")
        flows = [loom.Announce(12011, loom.Flow(0, 1, 100, tuple=loom.Tuple(
            "10.1.0.%d" % i, 5000 + i, "10.1.1.1", 80))) for i in range(3)]
        self.assertEqual(self.c.flows_announce(flows), 3)
        self.assertEqual(self.c.flows_announce([]), 0)
        v6 = loom.Tuple("fd00::1", 1, "fd00::2", 2, protocol=socket.IPPROTO_UDP)
        self.assertEqual(v6.family, 6)
        self.assertEqual(self.c.flows_announce([(12011, loom.Flow(2, 3, tuple=v6))]), 1)
        self.assertEqual(self.D.stat("flows_announced") - before, 4)
        # a batch loomd takes in part: the first two stand, the third was announced already
        part = [loom.Announce(12011, loom.Flow(0, 1, tuple=loom.Tuple("10.2.0.1", 1,
                                                                     "10.2.0.2", 2))),
                loom.Announce(12011, loom.Flow(0, 1, tuple=loom.Tuple("10.2.0.3", 1,
                                                                     "10.2.0.4", 2))),
                flows[0],
                loom.Announce(12011, loom.Flow(0, 1, tuple=loom.Tuple("10.2.0.5", 1,
                                                                     "10.2.0.6", 2)))]
        e = self.assertLoomError(loom.ExistsError, errno.EEXIST, self.c.flows_announce, part)
        self.assertEqual(e.accepted, 2)
        self.assertIn("already announced", e.message)
        e = self.assertLoomError(loom.ExistsError, errno.EEXIST, self.c.flows_announce,
                                 part[e.accepted:])
        self.assertEqual(e.accepted, 0)
        self.assertEqual({c["id"]: c for c in self.D.ctl("coflows", "1201")}[12011]["flows"], 6)
        # refused before anything is sent: no tuple, unknown coflow, not an Announce
        e = self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.flows_announce,
                                 [loom.Announce(12011, loom.Flow(0, 1))])
        self.assertIn("needs its 5-tuple", e.message)
        self.assertLoomError(loom.NotFoundError, errno.ENOENT, self.c.flows_announce,
                             [loom.Announce(999999, loom.Flow(0, 1, tuple=v6))])
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, self.c.flows_announce,
                             [loom.Flow(0, 1, tuple=v6)])

    def test_socket_tuple(self):
        c, s = tcp_pair()
        with c, s:
            t = loom.socket_tuple(c)
            self.assertEqual((str(t.src), t.src_port), c.getsockname())
            self.assertEqual((str(t.dst), t.dst_port), c.getpeername())
            self.assertEqual((t.family, t.protocol), (4, socket.IPPROTO_TCP))
            self.assertEqual(loom.socket_tuple(s.fileno()).dst_port, c.getsockname()[1])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            self.assertLoomError(loom.LoomError, errno.ENOTCONN, loom.socket_tuple, u)
            u.connect(("127.0.0.1", 9))
            self.assertEqual(loom.socket_tuple(u).protocol, socket.IPPROTO_UDP)
        with socket.socket(socket.AF_UNIX) as x:
            self.assertRaises(loom.LoomError, loom.socket_tuple, x)
        r, w = os.pipe()
        try:
            self.assertLoomError(loom.LoomError, errno.ENOTSOCK, loom.socket_tuple, r)
        finally:
            os.close(r)
            os.close(w)
        self.assertLoomError(loom.LoomError, errno.EBADF, loom.socket_tuple, 1 << 20)
        self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL, loom.socket_tuple,
                             "fd")

    def test_socket_announce(self):
        self.c.job_register(loom.Job(1301, coflows=[loom.Coflow(13011)]))
        self.addCleanup(self.c.job_unregister, 1301)
        c, s = tcp_pair()
        with c, s:
            self.c.socket_announce(c, 13011, loom.Hosts(1, 2), 4096)
            self.c.socket_announce(s, 13011, (2, 1))
            self.assertEqual({x["id"]: x for x in self.D.ctl("coflows", "1301")}[13011]
                             ["flows"], 2)
            self.assertLoomError(loom.ExistsError, errno.EEXIST, self.c.socket_announce, c,
                                 13011, (1, 2))
            # by address: no agent announced 127.0.0.1
            c2, s2 = tcp_pair()
            with c2, s2:
                e = self.assertLoomError(loom.NotFoundError, errno.ENOENT,
                                         self.c.socket_announce, c2, 13011)
                self.assertIn("no host owns the addresses", e.message)
                self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL,
                                     self.c.socket_announce, c2, 13011, (1, 2, 3))
                self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL,
                                     self.c.socket_announce, c2, 13011, (1, 1 << 32))
                self.assertLoomError(loom.InvalidArgumentError, errno.EINVAL,
                                     self.c.socket_announce, c2, 13011, (1, 2), -1)

    # ---- the job context manager ----------------------------------------------------------------

    def test_job_context(self):
        c, s = tcp_pair()
        with c, s, self.c.job(1401, coflows=[loom.Coflow(14011)], name="ctx") as job:
            self.assertEqual(job.id, 1401)
            self.assertIn(1401, self.D.job_ids())
            job.socket_announce(c, 14011, (0, 1), 10)
            job.announce(14011, loom.Flow(1, 0, tuple=loom.socket_tuple(s)))
            job.coflow_done(14011)
        # done (loomd may have seen it finish with its coflow) and unregistered
        self.assertNotIn(1401, self.D.job_ids())
        # keep: done, still listed
        with self.c.job(loom.Job(1402, coflows=[loom.Coflow(14021)]), keep=True) as job:
            pass
        self.D.wait_job_done(1402)
        self.c.job_unregister(1402)
        # done() and unregister() inside: nothing left to do on exit
        with self.c.job(1403, coflows=[loom.Coflow(14031)]) as job:
            job.done()
            job.unregister()
        self.assertNotIn(1403, self.D.job_ids())

    def test_job_context_on_error(self):
        with self.assertRaises(RuntimeError):
            with self.c.job(1501, coflows=[loom.Coflow(15011)], keep=True):
                self.assertIn(1501, self.D.job_ids())
                raise RuntimeError("the framework failed")
        self.assertNotIn(1501, self.D.job_ids())
        # a refused registration raises from the with statement; nothing to undo
        self.c.job_register(loom.Job(1502, coflows=[loom.Coflow(15021)]))
        self.addCleanup(self.c.job_unregister, 1502)
        with self.assertRaises(loom.ExistsError):
            with self.c.job(1502, coflows=[loom.Coflow(15022)]):
                self.fail("entered a job loomd refused")
        self.assertIn(1502, self.D.job_ids())

    # ---- handles --------------------------------------------------------------------------------

    def test_no_handle_leak(self):
        gc.collect()
        fds = own_fds()
        conns = self.D.stat("connections")
        clients = [loom.connect(self.D.address) for _ in range(20)]
        self.assertEqual(own_fds(), fds + 20)
        for c in clients[:10]:
            c.close()
        self.assertEqual(own_fds(), fds + 10)
        del c, clients  # the other 10 are freed when collected
        gc.collect()
        self.assertEqual(own_fds(), fds)
        with loom.connect(self.D.address):
            self.assertEqual(own_fds(), fds + 1)
        self.assertEqual(own_fds(), fds)
        wait_until("loomd sees the 20 connections closed",
                   lambda: self.D.stat("connections") == conns)

    # ---- the example ----------------------------------------------------------------------------

    def run_example(self, *args):
        return subprocess.run([sys.executable, EXAMPLE] + list(args), capture_output=True,
                              text=True, timeout=120)

    def test_shuffle_example(self):
        before = self.D.stat("flows_announced")
        r = self.run_example("--controller", self.D.address, "--mappers", "3", "--reducers",
                             "2", "--bytes", "200000", "--job-id", "4242", "--hosts", "4",
                             "--keep-job")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("job 4242 on %s" % self.D.address, r.stdout)
        self.assertIn("8 flows, 1600000 bytes", r.stdout)
        # loomd saw both stages: 3 x 2 + 2 flows announced, both coflows and the job done
        self.assertEqual(self.D.stat("flows_announced") - before, 8)
        job = self.D.wait_job_done(4242)
        self.assertEqual((job["coflows_done"], job["flows"]), (2, 8))
        cfs = {c["id"]: c for c in self.D.ctl("coflows", "4242")}
        self.assertEqual(set(cfs), {42421, 42422})
        self.assertEqual((cfs[42421]["state"], cfs[42421]["flows"]), ("done", 6))
        self.assertEqual((cfs[42422]["state"], cfs[42422]["flows"]), ("done", 2))
        self.assertEqual(cfs[42421]["bytes_expected"], 6 * 200000)
        self.c.job_unregister(4242)
        # without --keep-job it leaves nothing behind
        r = self.run_example("-c", self.D.address, "-m", "2", "-r", "2", "-b", "64k", "-j",
                             "4243")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("job done and unregistered", r.stdout)
        self.assertNotIn(4243, self.D.job_ids())

    def test_shuffle_example_failures(self):
        # loomd absent: exit 1 with libloom's message
        r = self.run_example("-c", "unix:" + os.path.join(self.D.dir, "nowhere.sock"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("connect unix:", r.stderr)
        # the job id taken: refused, exit 1, the other job untouched
        self.c.job_register(loom.Job(4244, coflows=[loom.Coflow(42441)]))
        self.addCleanup(self.c.job_unregister, 4244)
        r = self.run_example("-c", self.D.address, "-j", "4244", "-m", "1", "-r", "1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("already registered", r.stderr)
        # a host outside loomd's fabric: the announcements are refused, the job is unregistered
        # (process 8, the last mapper, plays host 8)
        r = self.run_example("-c", self.D.address, "-j", "4245", "-m", "9", "-r", "1",
                             "-b", "1k", "-H", str(HOSTS + 4), "-t", "20000")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("out of range", r.stderr)
        self.assertNotIn(4245, self.D.job_ids())
        # bad usage
        for bad in (["-m", "0"], ["-b", "12X"], ["--nonsense"], ["-j", "-3"]):
            r = self.run_example(*bad)
            self.assertEqual(r.returncode, 2, "%s: %s" % (bad, r.stderr))


if __name__ == "__main__":
    unittest.main(verbosity=2)
