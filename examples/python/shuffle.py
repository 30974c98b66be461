#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A two-stage shuffle between Python processes on loopback, scheduled by loomd.

The Python twin of examples/shuffle.c, on the Python bindings of libloom
(bindings/python/loom.py, docs/python.md):

  1. the driver connects and registers the job's DAG, in a ``with
     client.job(...)`` block:
       coflow JOB*10+1 "shuffle" (M mappers -> R reducers, M*R flows)
       -> coflow JOB*10+2 "collect" (R reducers -> 1 collector, R flows)
  2. it starts a collector, R reducers and M mappers, each a separate Python
     process (multiprocessing, "spawn") with its own connection to loomd;
     process i pretends to be host i % HOSTS of loomd's fabric (mappers are
     processes 0..M-1, reducers M..M+R-1, the collector M+R);
  3. every sender opens its TCP connections on 127.0.0.1, announces each with
     Client.socket_announce() and explicit host ids before the first byte,
     then sends BYTES on each; every receiver checks that each flow brought
     exactly BYTES;
  4. when all receivers of a stage have everything, the driver marks the
     stage's coflow done (the reducers start the second stage only then);
  5. leaving the ``with`` says job done and unregisters the job (--keep-job:
     leaves it registered, done, for loomctl to show); a summary on stdout.

Every wait is bounded by --timeout-ms. On any failure the driver kills its
processes, the job is unregistered, and it exits 1; bad usage exits 2.
"""

import argparse
import ctypes
import multiprocessing
import os
import queue
import selectors
import signal
import socket
import sys
import time

# The bindings of this source tree (bindings/python beside examples/), else an installed loom.py.
_TREE_BINDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bindings", "python")
if os.path.exists(os.path.join(_TREE_BINDINGS, "loom.py")):
    sys.path.insert(0, _TREE_BINDINGS)
import loom  # noqa: E402

PROG = "shuffle.py"
MAX_PROCS = 256
CHUNK = 64 * 1024


class Failure(Exception):
    """A failure already described (the message is printed as it is)."""


def say(msg):
    # One write per line: the processes share stderr.
    os.write(2, ("%s: %s\n" % (PROG, msg)).encode())


def left(deadline):
    return max(deadline - time.monotonic(), 0.0)


def die_with_parent(parent):
    """A worker dies with the driver, whatever happens to the driver (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


# ---- sockets ------------------------------------------------------------------------------------


def listen_loopback():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(MAX_PROCS)
    return s


def send_stage(client, who, coflow, src_host, peers, nbytes, deadline, socks):
    """Connects to each (port, dst_host), announces each flow, then sends nbytes on each.

    The sockets go into socks; they are closed here once everything is sent.
    On a failure they stay open for the caller to close after reporting, so
    that the driver hears of the cause before the receivers see short flows.
    """
    for port, dst_host in peers:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=left(deadline))
        except OSError as e:
            raise Failure("%s: connect 127.0.0.1:%d: %s" % (who, port, e)) from None
        socks.append(s)
        # Announced before the first byte, so the flow is scheduled from its start.
        client.socket_announce(s, coflow, loom.Hosts(src_host, dst_host), nbytes)
    chunk = b"\x5a" * CHUNK
    for s in socks:
        # Receivers read every connection at once (selectors): one at a time is fine here.
        todo = nbytes
        while todo:
            s.settimeout(left(deadline) or 0.001)
            try:
                todo -= s.send(chunk[:min(todo, CHUNK)])
            except OSError as e:
                raise Failure("%s: sending: %s" % (who, e)) from None
    while socks:
        socks.pop().close()


def receive_flows(lsock, n, nbytes, who, deadline):
    """Accepts n connections on lsock and reads each to its end; each must bring nbytes."""
    sel = selectors.DefaultSelector()
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)
    got = {}
    accepted = ended = 0
    try:
        while ended < n:
            if not left(deadline):
                raise Failure("%s: timed out with %d of %d flows received" % (who, ended, n))
            for key, _ in sel.select(left(deadline)):
                s = key.fileobj
                if s is lsock:
                    try:
                        conn, _ = lsock.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                    got[conn] = 0
                    accepted += 1
                    if accepted == n:
                        sel.unregister(lsock)
                    continue
                try:
                    data = s.recv(CHUNK)
                except BlockingIOError:
                    continue
                if data:
                    got[s] += len(data)
                    continue
                if got[s] != nbytes:
                    raise Failure("%s: a flow ended after %d of %d bytes" % (who, got[s], nbytes))
                sel.unregister(s)
                s.close()
                ended += 1
    finally:
        for s in got:
            s.close()
        sel.close()


# ---- the workers (separate processes) -----------------------------------------------------------


def worker(role, index, a, parent, q, go, info):
    """A mapper, a reducer or the collector; reports (kind, role, index, value) on q."""
    die_with_parent(parent)
    who = "%s %d" % (role, index)
    socks = []
    try:
        host = (index if role == "mapper" else
                a.mappers + index if role == "reducer" else a.mappers + a.reducers) % a.hosts
        if role == "collector":
            with listen_loopback() as ls:
                q.put(("port", role, index, ls.getsockname()[1]))
                receive_flows(ls, a.reducers, a.bytes, who, info["deadline"])
            q.put(("received", role, index, a.bytes * a.reducers))
            return
        name = "shuffle-py-%d-%s-%d" % (a.job_id, role, index)
        with loom.connect(a.controller, name=name) as client:
            if role == "mapper":
                peers = [(port, (a.mappers + j) % a.hosts)
                         for j, port in enumerate(info["reducer_ports"])]
                send_stage(client, who, info["shuffle"], host, peers, a.bytes,
                           info["deadline"], socks)
                q.put(("sent", role, index, a.bytes * len(peers)))
                return
            with listen_loopback() as ls:
                q.put(("port", role, index, ls.getsockname()[1]))
                receive_flows(ls, a.mappers, a.bytes, who, info["deadline"])
            q.put(("received", role, index, a.bytes * a.mappers))
            # The second stage starts when the driver has marked the shuffle done.
            if not go.wait(left(info["deadline"])):
                raise Failure("%s: timed out waiting for the second stage" % who)
            collector = (a.mappers + a.reducers) % a.hosts
            send_stage(client, who, info["collect"], host,
                       [(info["collector_port"], collector)], a.bytes, info["deadline"],
                       socks)
            q.put(("sent", role, index, a.bytes))
    except Exception as e:  # reported to the driver, which fails the run
        msg = str(e) if isinstance(e, Failure) else "%s: %s" % (who, e)
        q.put(("failed", role, index, msg))
        # The report is in the pipe before the receivers see this sender's flows end.
        q.close()
        q.join_thread()
        for s in socks:
            s.close()
        sys.exit(1)


# ---- the driver ---------------------------------------------------------------------------------


class Run:
    def __init__(self, a):
        self.a = a
        self.ctx = multiprocessing.get_context("spawn")
        self.q = self.ctx.Queue()
        self.go = self.ctx.Event()
        self.procs = []
        self.deadline = time.monotonic() + a.timeout_ms / 1000.0
        self.info = {"deadline": self.deadline, "shuffle": a.job_id * 10 + 1,
                     "collect": a.job_id * 10 + 2}

    def start(self, role, index):
        p = self.ctx.Process(target=worker, name="%s-%d" % (role, index), daemon=True,
                             args=(role, index, self.a, os.getpid(), self.q, self.go,
                                   dict(self.info)))
        p.start()
        self.procs.append(p)

    def wait(self, stage, want):
        """Waits for one report of each (kind, role, index) in want; {key: value}."""
        got = {}
        while len(got) < len(want):
            try:
                kind, role, index, value = self.q.get(timeout=min(left(self.deadline), 0.2)
                                                      or 0.001)
            except queue.Empty:
                # A worker that died without a word (killed, a bug) ends the wait early.
                dead = [p.name for p in self.procs if p.exitcode not in (None, 0)]
                if dead or not left(self.deadline):
                    raise Failure("%s: %s (%d of %d reports)" % (
                        stage, "exited early: " + ", ".join(dead) if dead else
                        "timed out after %d ms" % self.a.timeout_ms, len(got),
                        len(want))) from None
                continue
            if kind == "failed":
                raise Failure("%s: %s" % (stage, value))
            if (kind, role, index) in want:
                got[(kind, role, index)] = value
        return got

    def kill(self):
        for p in self.procs:
            if p.is_alive():
                p.kill()
        for p in self.procs:
            p.join(5)

    def reap(self):
        """Every worker exited 0, before the deadline."""
        for p in self.procs:
            p.join(left(self.deadline))
        bad = [p.name for p in self.procs if p.exitcode != 0]
        if bad:
            raise Failure("worker processes failed or did not exit: %s" % ", ".join(bad))

    def shuffle(self, job):
        a, info = self.a, self.info
        self.start("collector", 0)
        info["collector_port"] = self.wait("setup", {("port", "collector", 0)})[
            ("port", "collector", 0)]
        for j in range(a.reducers):
            self.start("reducer", j)
        ports = self.wait("setup", {("port", "reducer", j) for j in range(a.reducers)})
        info["reducer_ports"] = [ports[("port", "reducer", j)] for j in range(a.reducers)]
        t0 = time.monotonic()
        for i in range(a.mappers):
            self.start("mapper", i)
        # Stage 1: every mapper sent, every reducer has all its input.
        self.wait("shuffle", {("sent", "mapper", i) for i in range(a.mappers)} |
                  {("received", "reducer", j) for j in range(a.reducers)})
        job.coflow_done(info["shuffle"])
        t1 = time.monotonic()
        self.go.set()
        # Stage 2: every reducer sent its output, the collector has it all.
        self.wait("collect", {("sent", "reducer", j) for j in range(a.reducers)} |
                  {("received", "collector", 0)})
        job.coflow_done(info["collect"])
        return t0, t1, time.monotonic()


def run(a):
    shuffle_id, collect_id = a.job_id * 10 + 1, a.job_id * 10 + 2
    spec = loom.Job(
        id=a.job_id, weight=1, name="example-shuffle-py",
        coflows=[loom.Coflow(shuffle_id, expected_flows=a.mappers * a.reducers),
                 loom.Coflow(collect_id, expected_flows=a.reducers)],
        edges=[loom.Edge(shuffle_id, collect_id)])
    r = Run(a)
    try:
        with loom.connect(a.controller, name="shuffle-py") as client:
            address = client.address()
            with client.job(spec, keep=a.keep_job) as job:
                t0, t1, t2 = r.shuffle(job)
            r.reap()
    except (Failure, loom.LoomError) as e:
        say(str(e))
        r.kill()
        return 1
    flows = a.mappers * a.reducers + a.reducers
    print("%s: job %d on %s (%d hosts)" % (PROG, a.job_id, address, a.hosts))
    print("  coflow %d shuffle: %d mappers -> %d reducers, %d flows of %d bytes, %.3f s"
          % (shuffle_id, a.mappers, a.reducers, a.mappers * a.reducers, a.bytes, t1 - t0))
    print("  coflow %d collect: %d reducers -> 1 collector, %d flows of %d bytes, %.3f s"
          % (collect_id, a.reducers, a.reducers, a.bytes, t2 - t1))
    print("  %d flows, %d bytes in %.3f s; job done and %s" % (
        flows, flows * a.bytes, t2 - t0,
        "kept registered (--keep-job)" if a.keep_job else "unregistered"))
    return 0


# ---- options ------------------------------------------------------------------------------------


def size(s):
    mult = {"": 1, "k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = s[:-1] if s.endswith("B") else s
    unit = t[-1:] if t[-1:] in mult else ""
    num = t[:len(t) - len(unit)]
    if not num.isdigit() or int(num) == 0 or int(num) * mult[unit] > 1 << 40:
        raise argparse.ArgumentTypeError("not a size of 1 byte to 1T (k/M/G suffixes)")
    return int(num) * mult[unit]


def bounded(lo, hi):
    def parse(s):
        if not s.isdigit() or not lo <= int(s) <= hi:
            raise argparse.ArgumentTypeError("not a number in %d..%d" % (lo, hi))
        return int(s)
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="A two-stage shuffle between Python processes on 127.0.0.1, "
        "scheduled by loomd: coflow JOB*10+1 (mappers -> reducers) then coflow JOB*10+2 "
        "(reducers -> one collector). Every flow is announced with its socket's 5-tuple.",
        epilog="Exit status: 0 when every flow arrived whole and loomd took every request, "
        "1 on any failure, 2 for bad usage.")
    p.add_argument("-m", "--mappers", type=bounded(1, MAX_PROCS), default=4,
                   help="mapper processes (default 4)")
    p.add_argument("-r", "--reducers", type=bounded(1, MAX_PROCS), default=4,
                   help="reducer processes (default 4)")
    p.add_argument("-b", "--bytes", type=size, default=1 << 20,
                   help="bytes per flow, k/M/G suffixes (default 1M)")
    p.add_argument("-c", "--controller", default=None,
                   help="loomd: unix:/PATH, /PATH, tcp:HOST:PORT, HOST:PORT "
                   "(default $LOOM_CONTROLLER, else %s)" % loom.DEFAULT_ADDRESS)
    p.add_argument("-j", "--job-id", type=bounded(0, ((1 << 64) - 3) // 10), default=None,
                   help="job id (default: the driver's process id)")
    p.add_argument("-H", "--hosts", type=bounded(1, 1 << 20), default=4,
                   help="process i pretends to be host i %% N (default 4)")
    p.add_argument("-t", "--timeout-ms", type=bounded(1, 24 * 3600 * 1000), default=60000,
                   help="bound on the whole run (default 60000)")
    p.add_argument("-k", "--keep-job", action="store_true",
                   help="leave the finished job registered (loomctl shows it done)")
    a = p.parse_args(argv)
    if a.job_id is None:
        a.job_id = os.getpid()
    return a


def main(argv):
    a = parse_args(argv)
    try:
        loom.load_library()
    except loom.LibraryNotFoundError as e:
        say(str(e))
        return 1
    return run(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
