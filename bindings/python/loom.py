# SPDX-License-Identifier: BSD-3-Clause
"""Python bindings for libloom, the framework client of the Loom controller.

A framework (a job scheduler, a shuffle service) connects to loomd,
registers each job as a DAG of coflows, announces the 5-tuples of its flows
as they open, and says when coflows and jobs are done; loomd then orders the
coflows on the fabric. docs/python.md is the guide, docs/libloom.md the C
library underneath.

This module is ctypes over libloom.so's public API (controlplane/client/
loom.h): no compiled extension. Every C call has its counterpart, named as
in C without the ``loom_client_`` prefix:

    C (loom.h)                       Python
    loom_client_connect()            connect() -> Client (also Client(...))
    loom_client_free()               Client.free() (= close(), with, GC)
    loom_client_address()            Client.address()
    loom_client_version()            Client.version()
    loom_client_job_register()       Client.job_register(Job)
    loom_client_job_extend()         Client.job_extend(Job)
    loom_client_flows_announce()     Client.flows_announce([Announce])
    loom_client_socket_tuple()       socket_tuple(sock)
    loom_client_socket_announce()    Client.socket_announce(sock, ...)
    loom_client_coflow_done()        Client.coflow_done(id)
    loom_client_job_done()           Client.job_done(id)
    loom_client_job_unregister()     Client.job_unregister(id)
    loom_client_strerror()           strerror()

and each C struct its dataclass (Tuple, Flow, Coflow, Edge, Job, Announce,
Hosts). Failures raise LoomError subclasses carrying ``errno`` and
``message`` (libloom's own words, from loom_client_strerror()).
``Client.job()`` is a context manager that registers a job and, on exit,
says it is done and unregisters it.

The library is found, in this order, at: load_library(path) when called
before anything else; $LOOM_LIBLOOM (a path to libloom.so; nothing else is
tried when it is set); $LOOM_BUILDDIR/controlplane/client/libloom.so; the
build folders ``build`` and ``build-release`` of the source tree this file
sits in; ctypes.util.find_library("loom") (an installed libloom).
LibraryNotFoundError lists the places tried.

Threads: a Client may be shared by threads (libloom serialises its requests)
but must not be closed while another thread is inside a call on it. After
fork() a child may keep using its parent's client (libloom reconnects).
"""

import ctypes
import ctypes.util
import errno as _errno
import ipaddress
import os
import socket
import threading
import weakref
from dataclasses import dataclass
from typing import Optional, Sequence, Union

__all__ = [
    "ENV_LIBLOOM", "ENV_CONTROLLER", "ENV_TLS_CERT", "ENV_TLS_KEY", "ENV_TLS_CA",
    "ENV_TOKEN", "DEFAULT_ADDRESS", "TIMEOUT_MS_DEFAULT",
    "LoomError", "InvalidArgumentError", "NotFoundError", "ExistsError", "CycleError",
    "AlreadyDoneError", "AccessDeniedError", "LimitError", "LoomTimeoutError",
    "ConnectionFailedError", "ProtocolError", "ClosedError", "LibraryNotFoundError",
    "Tuple", "Flow", "Coflow", "Edge", "Job", "Announce", "Hosts",
    "Client", "JobHandle", "connect", "socket_tuple", "strerror", "load_library",
    "library_path",
]

# The environment variable naming libloom.so for these bindings.
ENV_LIBLOOM = "LOOM_LIBLOOM"
# Those libloom itself reads (loom.h), and its defaults.
ENV_CONTROLLER = "LOOM_CONTROLLER"
ENV_TLS_CERT = "LOOM_TLS_CERT"
ENV_TLS_KEY = "LOOM_TLS_KEY"
ENV_TLS_CA = "LOOM_TLS_CA"
ENV_TOKEN = "LOOM_TOKEN"
DEFAULT_ADDRESS = "unix:/run/loom/loomd.sock"
TIMEOUT_MS_DEFAULT = 5000

_U16 = (1 << 16) - 1
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1
_INT_MAX = (1 << 31) - 1

# ---- errors -------------------------------------------------------------------------------------


class LoomError(OSError):
    """A failed libloom call: errno (an errno.E* number) and message (what failed).

    An OSError, so ``e.errno`` and ``e.strerror`` (= ``e.message``) work as
    for any OSError. The subclass says the kind: InvalidArgumentError
    (EINVAL), NotFoundError (ENOENT), ExistsError (EEXIST), CycleError
    (ELOOP), AlreadyDoneError (EALREADY), AccessDeniedError (EACCES, EPERM),
    LimitError (ENOSPC), LoomTimeoutError (ETIMEDOUT), ConnectionFailedError
    (no connection to loomd), ProtocolError (EPROTO, EPROTONOSUPPORT,
    EBADMSG, EMSGSIZE), ClosedError (a call on a closed client, errno
    EBADF); others (ENAMETOOLONG, ENOTSOCK, ENOTCONN, EAFNOSUPPORT, EIO, ...)
    are LoomError itself.
    """

    def __init__(self, errno: int, message: str):
        super().__init__(errno, message)
        self.message = message

    def __str__(self):
        return "%s [%s]" % (self.message, _errno.errorcode.get(self.errno, self.errno))


class InvalidArgumentError(LoomError, ValueError):
    """EINVAL: a bad argument (checked here or by libloom) or a request loomd found inconsistent."""


class NotFoundError(LoomError):
    """ENOENT: an unknown job or coflow, or addresses no agent owns."""


class ExistsError(LoomError):
    """EEXIST: a job, coflow or flow loomd already knows."""


class CycleError(LoomError):
    """ELOOP: the job's edges have a cycle."""


class AlreadyDoneError(LoomError):
    """EALREADY: the coflow or job is already done."""


class AccessDeniedError(LoomError, PermissionError):
    """EACCES or EPERM: a refused token or certificate, another tenant's job, the wrong role."""


class LimitError(LoomError):
    """ENOSPC: a limit of loomd or a quota of the tenant."""


class LoomTimeoutError(LoomError, TimeoutError):
    """ETIMEDOUT: no answer within the client's timeout."""


class ConnectionFailedError(LoomError, ConnectionError):
    """No connection to loomd: refused, no socket file (connect's ENOENT), reset, shut down."""


class ProtocolError(LoomError):
    """EPROTO, EPROTONOSUPPORT, EBADMSG, EMSGSIZE: the peer does not speak loom.proto as we do."""


class ClosedError(LoomError):
    """EBADF: a call on a client that was closed."""


class LibraryNotFoundError(LoomError):
    """libloom.so could not be found or loaded; the message lists where it was looked for."""

    def __init__(self, message: str):
        LoomError.__init__(self, _errno.ENOENT, message)


_ERRNO_CLASS = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.ENOENT: NotFoundError,
    _errno.EEXIST: ExistsError,
    _errno.ELOOP: CycleError,
    _errno.EALREADY: AlreadyDoneError,
    _errno.EACCES: AccessDeniedError,
    _errno.EPERM: AccessDeniedError,
    _errno.ENOSPC: LimitError,
    _errno.ETIMEDOUT: LoomTimeoutError,
    _errno.ECONNREFUSED: ConnectionFailedError,
    _errno.ECONNRESET: ConnectionFailedError,
    _errno.EPIPE: ConnectionFailedError,
    _errno.ESHUTDOWN: ConnectionFailedError,
    _errno.EPROTO: ProtocolError,
    _errno.EPROTONOSUPPORT: ProtocolError,
    _errno.EBADMSG: ProtocolError,
    _errno.EMSGSIZE: ProtocolError,
}


def _error(err: int, message: str, connecting: bool = False) -> LoomError:
    """The LoomError subclass for errno err (positive)."""
    if connecting and err == _errno.ENOENT:
        return ConnectionFailedError(err, message)  # no socket file: loomd is not there
    return _ERRNO_CLASS.get(err, LoomError)(err, message)


def _invalid(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(_errno.EINVAL, message)


# ---- the library --------------------------------------------------------------------------------


class _CTuple(ctypes.Structure):
    _fields_ = [("family", ctypes.c_uint8), ("protocol", ctypes.c_uint8),
                ("src_port", ctypes.c_uint16), ("dst_port", ctypes.c_uint16),
                ("src", ctypes.c_uint8 * 16), ("dst", ctypes.c_uint8 * 16)]


class _CFlow(ctypes.Structure):
    _fields_ = [("src_host", ctypes.c_uint32), ("dst_host", ctypes.c_uint32),
                ("bytes", ctypes.c_uint64), ("by_address", ctypes.c_bool),
                ("tuple", _CTuple)]


class _CCoflow(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("release_offset_ns", ctypes.c_uint64),
                ("expected_flows", ctypes.c_uint32), ("flows", ctypes.POINTER(_CFlow)),
                ("n_flows", ctypes.c_size_t)]


class _CEdge(ctypes.Structure):
    _fields_ = [("parent", ctypes.c_uint64), ("child", ctypes.c_uint64),
                ("delay_ns", ctypes.c_uint64)]


class _CJob(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("weight", ctypes.c_double),
                ("name", ctypes.c_char_p), ("coflows", ctypes.POINTER(_CCoflow)),
                ("n_coflows", ctypes.c_size_t), ("edges", ctypes.POINTER(_CEdge)),
                ("n_edges", ctypes.c_size_t)]


class _CAnnounce(ctypes.Structure):
    _fields_ = [("coflow_id", ctypes.c_uint64), ("flow", _CFlow)]


class _CHosts(ctypes.Structure):
    _fields_ = [("src_host", ctypes.c_uint32), ("dst_host", ctypes.c_uint32)]


class _COptions(ctypes.Structure):
    _fields_ = [("timeout_ms", ctypes.c_int), ("name", ctypes.c_char_p)]


# The C structs, by their names in loom.h (tests compare their layout with the C compiler's).
C_STRUCTS = {
    "loom_client_tuple": _CTuple,
    "loom_client_flow": _CFlow,
    "loom_client_coflow": _CCoflow,
    "loom_client_edge": _CEdge,
    "loom_client_job": _CJob,
    "loom_client_announce": _CAnnounce,
    "loom_client_hosts": _CHosts,
    "loom_client_options": _COptions,
}

_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def _declare(lib):
    """Sets the prototypes of loom.h's calls on lib (AttributeError when one is missing)."""
    vp, cp, i, u64, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint64, \
        ctypes.c_size_t
    protos = {
        "loom_client_connect": (vp, [cp, ctypes.POINTER(_COptions)]),
        "loom_client_free": (vp, [vp]),
        "loom_client_address": (cp, [vp]),
        "loom_client_version": (ctypes.c_uint32, [vp]),
        "loom_client_job_register": (i, [vp, ctypes.POINTER(_CJob)]),
        "loom_client_job_extend": (i, [vp, ctypes.POINTER(_CJob)]),
        "loom_client_flows_announce": (i, [vp, ctypes.POINTER(_CAnnounce), sz]),
        "loom_client_socket_tuple": (i, [i, ctypes.POINTER(_CTuple)]),
        "loom_client_socket_announce": (i, [vp, i, u64, ctypes.POINTER(_CHosts), u64]),
        "loom_client_coflow_done": (i, [vp, u64]),
        "loom_client_job_done": (i, [vp, u64]),
        "loom_client_job_unregister": (i, [vp, u64]),
        "loom_client_strerror": (cp, []),
    }
    for name, (res, args) in protos.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def _candidates():
    """(where, path) pairs to try when $LOOM_LIBLOOM is not set."""
    out = []
    build = os.environ.get("LOOM_BUILDDIR")
    if build:
        out.append(("$LOOM_BUILDDIR", os.path.join(build, "controlplane", "client",
                                                   "libloom.so")))
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for b in ("build", "build-release"):
        out.append(("source tree", os.path.join(src, b, "controlplane", "client",
                                                "libloom.so")))
    found = ctypes.util.find_library("loom")
    out.append(("ctypes.util.find_library('loom')", found))
    return out


def load_library(path: Optional[str] = None):
    """Loads libloom (path, else the search order in the module's docstring) once; returns it.

    Raises LibraryNotFoundError naming every place tried. A second call
    returns the library already loaded (and fails when path names another).
    """
    global _lib, _lib_path
    with _lib_lock:
        if _lib is not None:
            if path is not None and os.path.realpath(path) != os.path.realpath(_lib_path):
                raise LibraryNotFoundError("libloom is already loaded from %s, not %s"
                                           % (_lib_path, path))
            return _lib
        if path is not None:
            tries = [("load_library()", path)]
        elif os.environ.get(ENV_LIBLOOM):
            tries = [("$" + ENV_LIBLOOM, os.environ[ENV_LIBLOOM])]
        else:
            tries = _candidates()
        failed = []
        for where, p in tries:
            if not p:
                failed.append("%s: nothing found" % where)
                continue
            if os.sep in p and not os.path.exists(p):
                failed.append("%s: %s does not exist" % (where, p))
                continue
            try:
                lib = ctypes.CDLL(p, use_errno=True)
                _declare(lib)
            except (OSError, AttributeError) as e:
                failed.append("%s: %s: %s" % (where, p, e))
                continue
            _lib, _lib_path = lib, p
            return lib
        raise LibraryNotFoundError(
            "libloom not found (set $%s to the path of libloom.so, or build Loom): %s"
            % (ENV_LIBLOOM, "; ".join(failed)))


def library_path() -> str:
    """The path libloom was loaded from (loading it if needed)."""
    load_library()
    return _lib_path


def strerror() -> str:
    """loom_client_strerror(): the message of this thread's last failed libloom call."""
    return load_library().loom_client_strerror().decode("utf-8", "replace")


def _check(r: int) -> int:
    """r, or raises the LoomError of -r with this thread's libloom message."""
    if r < 0:
        raise _error(-r, strerror())
    return r


# ---- argument checks ----------------------------------------------------------------------------


def _uint(what: str, v, top: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _invalid("%s: %r is not an integer" % (what, v))
    if v < 0 or v > top:
        raise _invalid("%s: %d is out of range 0..%d" % (what, v, top))
    return v


def _text(what: str, s: Optional[str]) -> Optional[bytes]:
    if s is None:
        return None
    if not isinstance(s, str):
        raise _invalid("%s: %r is not a str" % (what, s))
    b = s.encode("utf-8")
    if b"\0" in b:
        raise _invalid("%s: %r holds a NUL character" % (what, s))
    return b


def _fd(sock) -> int:
    """The descriptor of a socket object, anything with fileno(), or an int."""
    if isinstance(sock, int) and not isinstance(sock, bool):
        return _uint("fd", sock, _INT_MAX)
    try:
        return sock.fileno()
    except AttributeError:
        raise _invalid("%r is neither a socket nor a file descriptor" % (sock,)) from None


# ---- the structs --------------------------------------------------------------------------------

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


@dataclass(frozen=True)
class Tuple:
    """struct loom_client_tuple: a flow's 5-tuple as its sending host sees it.

    src and dst: ipaddress objects (strings and packed bytes are converted),
    both IPv4 or both IPv6; ports in host order; protocol 6 (TCP) or 17
    (UDP). family is 4 or 6, from the addresses. "No tuple" (family 0 in C)
    is None where a Tuple is expected.
    """
    src: IPAddress
    src_port: int
    dst: IPAddress
    dst_port: int
    protocol: int = socket.IPPROTO_TCP

    def __post_init__(self):
        for side in ("src", "dst"):
            v = getattr(self, side)
            if not isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
                try:
                    v = ipaddress.ip_address(v)
                except ValueError as e:
                    raise _invalid("tuple %s: %s" % (side, e)) from None
                object.__setattr__(self, side, v)
        if self.src.version != self.dst.version:
            raise _invalid("tuple: src %s and dst %s are not the same family"
                           % (self.src, self.dst))
        _uint("tuple src_port", self.src_port, _U16)
        _uint("tuple dst_port", self.dst_port, _U16)
        _uint("tuple protocol", self.protocol, 255)

    @property
    def family(self) -> int:
        return self.src.version

    def _to_c(self, t: _CTuple):
        t.family = self.family
        t.protocol = self.protocol
        t.src_port = self.src_port
        t.dst_port = self.dst_port
        ctypes.memmove(t.src, self.src.packed, len(self.src.packed))
        ctypes.memmove(t.dst, self.dst.packed, len(self.dst.packed))

    @staticmethod
    def _from_c(t: _CTuple) -> Optional["Tuple"]:
        if t.family == 0:
            return None
        n = 4 if t.family == 4 else 16
        return Tuple(src=ipaddress.ip_address(bytes(t.src)[:n]), src_port=t.src_port,
                     dst=ipaddress.ip_address(bytes(t.dst)[:n]), dst_port=t.dst_port,
                     protocol=t.protocol)


@dataclass
class Flow:
    """struct loom_client_flow: one flow between two hosts of loomd's fabric.

    bytes: expected size, 0 = unknown. by_address: loomd finds the hosts
    from the tuple's addresses (src_host and dst_host are ignored; needs a
    tuple). tuple: optional at registration, required when announced.
    """
    src_host: int = 0
    dst_host: int = 0
    bytes: int = 0
    by_address: bool = False
    tuple: Optional[Tuple] = None

    def _to_c(self, f: _CFlow, what: str):
        f.src_host = _uint(what + " src_host", self.src_host, _U32)
        f.dst_host = _uint(what + " dst_host", self.dst_host, _U32)
        f.bytes = _uint(what + " bytes", self.bytes, _U64)
        f.by_address = bool(self.by_address)
        if self.tuple is not None:
            if not isinstance(self.tuple, Tuple):
                raise _invalid("%s tuple: %r is not a loom.Tuple" % (what, self.tuple))
            self.tuple._to_c(f.tuple)


@dataclass
class Coflow:
    """struct loom_client_coflow: id unique within loomd (across jobs).

    expected_flows 0 with flows listed: exactly those. More than listed: the
    rest are announced later. 0 without flows: an open coflow, which
    completes on coflow_done().
    """
    id: int
    release_offset_ns: int = 0
    expected_flows: int = 0
    flows: Sequence[Flow] = ()


@dataclass
class Edge:
    """struct loom_client_edge: child is released delay_ns after parent completes."""
    parent: int
    child: int
    delay_ns: int = 0


@dataclass
class Job:
    """struct loom_client_job: a DAG of coflows. weight 0 means 1; name for loomd's logs."""
    id: int
    coflows: Sequence[Coflow] = ()
    edges: Sequence[Edge] = ()
    weight: float = 0.0
    name: Optional[str] = None


@dataclass
class Announce:
    """struct loom_client_announce: one flow (with its tuple) for a registered coflow."""
    coflow_id: int
    flow: Flow


@dataclass
class Hosts:
    """struct loom_client_hosts: the hosts of a socket's flow, when the caller knows them."""
    src_host: int
    dst_host: int


def _job_to_c(job: Job):
    """A _CJob for job, and the objects its pointers point into (keep them alive)."""
    if not isinstance(job, Job):
        raise _invalid("%r is not a loom.Job" % (job,))
    keep = []
    cj = _CJob()
    cj.id = _uint("job id", job.id, _U64)
    try:
        cj.weight = float(job.weight)
    except (TypeError, ValueError):
        raise _invalid("job %d weight: %r is not a number" % (job.id, job.weight)) from None
    name = _text("job %d name" % job.id, job.name)
    keep.append(name)
    cj.name = name
    coflows = list(job.coflows)
    cfs = (_CCoflow * max(len(coflows), 1))()
    for i, cf in enumerate(coflows):
        if not isinstance(cf, Coflow):
            raise _invalid("job %d coflow %d: %r is not a loom.Coflow" % (job.id, i, cf))
        c = cfs[i]
        c.id = _uint("job %d coflow %d id" % (job.id, i), cf.id, _U64)
        c.release_offset_ns = _uint("coflow %d release_offset_ns" % cf.id,
                                    cf.release_offset_ns, _U64)
        c.expected_flows = _uint("coflow %d expected_flows" % cf.id, cf.expected_flows, _U32)
        flows = list(cf.flows)
        fl = (_CFlow * max(len(flows), 1))()
        for j, f in enumerate(flows):
            if not isinstance(f, Flow):
                raise _invalid("coflow %d flow %d: %r is not a loom.Flow" % (cf.id, j, f))
            f._to_c(fl[j], "coflow %d flow %d" % (cf.id, j))
        keep.append(fl)
        c.flows = fl
        c.n_flows = len(flows)
    keep.append(cfs)
    cj.coflows = cfs
    cj.n_coflows = len(coflows)
    edges = list(job.edges)
    es = (_CEdge * max(len(edges), 1))()
    for i, e in enumerate(edges):
        if not isinstance(e, Edge):
            raise _invalid("job %d edge %d: %r is not a loom.Edge" % (job.id, i, e))
        es[i].parent = _uint("job %d edge %d parent" % (job.id, i), e.parent, _U64)
        es[i].child = _uint("job %d edge %d child" % (job.id, i), e.child, _U64)
        es[i].delay_ns = _uint("job %d edge %d delay_ns" % (job.id, i), e.delay_ns, _U64)
    keep.append(es)
    cj.edges = es
    cj.n_edges = len(edges)
    return cj, keep


def _hosts_to_c(hosts) -> Optional[_CHosts]:
    if hosts is None:
        return None
    if isinstance(hosts, Hosts):
        src, dst = hosts.src_host, hosts.dst_host
    else:
        try:
            src, dst = hosts
        except (TypeError, ValueError):
            raise _invalid("hosts: %r is neither a loom.Hosts nor a (src, dst) pair"
                           % (hosts,)) from None
    return _CHosts(_uint("hosts src_host", src, _U32), _uint("hosts dst_host", dst, _U32))


# ---- calls without a client ---------------------------------------------------------------------


def socket_tuple(sock) -> Tuple:
    """loom_client_socket_tuple(): the 5-tuple of a connected TCP or UDP socket, from this end.

    sock: a socket object, anything with fileno(), or a descriptor. src is
    the local address, dst the peer's; an IPv4-mapped IPv6 address gives an
    IPv4 tuple. Raises LoomError: ENOTCONN, EAFNOSUPPORT, EPROTONOSUPPORT
    (ProtocolError), ENOTSOCK, EBADF.
    """
    lib = load_library()
    t = _CTuple()
    _check(lib.loom_client_socket_tuple(_fd(sock), ctypes.byref(t)))
    return Tuple._from_c(t)


def connect(address: Optional[str] = None, timeout_ms: int = 0,
            name: Optional[str] = None) -> "Client":
    """loom_client_connect(): a Client connected to loomd, after the Hello handshake.

    address: "unix:/path", "/path", "./path", "tcp:HOST:PORT" or "HOST:PORT"
    ("[::1]:7420"); None: $LOOM_CONTROLLER, else DEFAULT_ADDRESS. timeout_ms
    bounds every call (0: TIMEOUT_MS_DEFAULT; negative: InvalidArgumentError).
    name shows in loomd's logs (None: "libloom[PID]"). Raises
    ConnectionFailedError (refused; no socket file, errno ENOENT),
    InvalidArgumentError (bad address), LoomTimeoutError, ProtocolError,
    AccessDeniedError (a refused token), ...
    """
    return Client(address, timeout_ms=timeout_ms, name=name)


def _free_handle(lib, handle):
    lib.loom_client_free(handle)


# ---- the client ---------------------------------------------------------------------------------


class Client:
    """A connection to loomd (struct loom_client). Close it with close() or ``with``.

    A client not closed is freed when it is garbage-collected (or at exit),
    so its descriptor never leaks; close() says when.
    """

    def __init__(self, address: Optional[str] = None, timeout_ms: int = 0,
                 name: Optional[str] = None):
        lib = load_library()
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or \
                not -_INT_MAX - 1 <= timeout_ms <= _INT_MAX:
            raise _invalid("timeout_ms: %r is not a C int" % (timeout_ms,))
        opts = _COptions(timeout_ms, _text("name", name))
        addr = _text("address", address)
        handle = lib.loom_client_connect(addr, ctypes.byref(opts))
        if not handle:
            err = ctypes.get_errno() or _errno.EIO
            raise _error(err, strerror(), connecting=True)
        self._lib = lib
        self._handle = handle
        self._finalizer = weakref.finalize(self, _free_handle, lib, handle)

    def _h(self):
        if self._handle is None:
            raise ClosedError(_errno.EBADF, "the client is closed")
        return self._handle

    @property
    def closed(self) -> bool:
        return self._handle is None

    def free(self) -> None:
        """loom_client_free(): closes the connection; later calls raise ClosedError. Idempotent."""
        if self._handle is not None:
            self._handle = None
            self._finalizer()

    close = free

    def __enter__(self) -> "Client":
        self._h()
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self):
        if self._handle is None:
            return "<loom.Client closed>"
        return "<loom.Client %s v%d>" % (self.address(), self.version())

    def address(self) -> str:
        """loom_client_address(): the canonical address ("unix:/path" or "tcp:HOST:PORT")."""
        return self._lib.loom_client_address(self._h()).decode("utf-8", "replace")

    def version(self) -> int:
        """loom_client_version(): the protocol version of the current connection."""
        return self._lib.loom_client_version(self._h())

    def job_register(self, job: Job) -> None:
        """loom_client_job_register(): registers job's coflows (with the flows known) and edges.

        Raises ExistsError (a job or coflow id already known), CycleError,
        InvalidArgumentError (inconsistent fields, a host outside the fabric), ...
        """
        cj, keep = _job_to_c(job)
        _check(self._lib.loom_client_job_register(self._h(), ctypes.byref(cj)))
        del keep

    def job_extend(self, job: Job) -> None:
        """loom_client_job_extend(): adds job's coflows and edges to the registered job job.id.

        For a DAG that grows as the framework learns it; job.weight and job.name
        are ignored, each edge must lead to one of the coflows added. Raises
        NotFoundError (no such job), AlreadyDoneError (it has finished),
        InvalidArgumentError (an edge into a coflow registered before), and
        what job_register() raises.
        """
        cj, keep = _job_to_c(job)
        _check(self._lib.loom_client_job_extend(self._h(), ctypes.byref(cj)))
        del keep

    def flows_announce(self, announces: Sequence[Announce]) -> int:
        """loom_client_flows_announce(): announces flows (each with its tuple) in one request.

        Returns len(announces) when loomd took them all. When it refused one,
        raises the LoomError of that refusal with ``accepted`` set to how
        many it took before it (announces[:accepted] stand; announce the rest
        again after fixing announces[accepted]). An empty list returns 0
        without asking.
        """
        items = list(announces)
        h = self._h()
        if not items:
            return 0
        arr = (_CAnnounce * len(items))()
        for i, a in enumerate(items):
            if isinstance(a, tuple) and len(a) == 2:
                a = Announce(*a)
            if not isinstance(a, Announce) or not isinstance(a.flow, Flow):
                raise _invalid("flow %d: %r is not a loom.Announce of a loom.Flow" % (i, a))
            arr[i].coflow_id = _uint("flow %d coflow_id" % i, a.coflow_id, _U64)
            a.flow._to_c(arr[i].flow, "flow %d (coflow %d)" % (i, a.coflow_id))
        r = self._lib.loom_client_flows_announce(h, arr, len(items))
        if r < 0 or r < len(items):
            err = -r if r < 0 else (ctypes.get_errno() or _errno.EIO)
            e = _error(err, strerror())
            e.accepted = max(r, 0)
            raise e
        return r

    def socket_announce(self, sock, coflow_id: int, hosts=None, bytes: int = 0) -> None:
        """loom_client_socket_announce(): announces a connected socket's flow for coflow_id.

        Call it on the sending end. hosts: a Hosts or (src_host, dst_host);
        None: loomd maps the addresses to hosts (by_address; NotFoundError
        when no agent owns them). bytes: expected size, 0 = unknown.
        """
        h = self._h()
        ch = _hosts_to_c(hosts)
        _check(self._lib.loom_client_socket_announce(
            h, _fd(sock), _uint("coflow_id", coflow_id, _U64),
            ctypes.byref(ch) if ch is not None else None, _uint("bytes", bytes, _U64)))

    def coflow_done(self, coflow_id: int) -> None:
        """loom_client_coflow_done(): an open coflow has all its flows done."""
        h = self._h()
        _check(self._lib.loom_client_coflow_done(h, _uint("coflow_id", coflow_id, _U64)))

    def job_done(self, job_id: int) -> None:
        """loom_client_job_done(): the job has finished (AlreadyDoneError: loomd saw it finish)."""
        h = self._h()
        _check(self._lib.loom_client_job_done(h, _uint("job_id", job_id, _U64)))

    def job_unregister(self, job_id: int) -> None:
        """loom_client_job_unregister(): removes the job and its coflows from loomd."""
        h = self._h()
        _check(self._lib.loom_client_job_unregister(h, _uint("job_id", job_id, _U64)))

    def job(self, job: Union[Job, int], coflows: Sequence[Coflow] = (),
            edges: Sequence[Edge] = (), weight: float = 0.0, name: Optional[str] = None,
            keep: bool = False) -> "JobHandle":
        """A context manager for one job: ``with client.job(Job(...)) as job:``.

        job: a Job, or its id with coflows, edges, weight and name given
        here. Entering registers it. Leaving normally says the job is done
        (unless done() was called; AlreadyDoneError is fine: loomd saw it
        finish with its last coflow) and unregisters it, unless keep is true
        (then loomd lists it as done until its done_retention). Leaving with
        an exception unregisters it whatever keep says, so nothing is left
        behind, and lets the exception through.
        """
        if not isinstance(job, Job):
            job = Job(id=job, coflows=coflows, edges=edges, weight=weight, name=name)
        return JobHandle(self, job, keep)


class JobHandle:
    """A registered job (Client.job()): the client's calls with the job's id filled in."""

    def __init__(self, client: Client, job: Job, keep: bool):
        self.client = client
        self.job = job
        self.id = job.id
        self.keep = keep
        self.registered = False
        self.finished = False

    def __enter__(self) -> "JobHandle":
        self.client.job_register(self.job)
        self.registered = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.registered:
            return
        if exc_type is not None:
            try:
                self.unregister()
            except LoomError as e:
                if exc is not None and hasattr(exc, "add_note"):
                    exc.add_note("and unregistering job %d failed: %s" % (self.id, e))
            return
        if not self.finished:
            try:
                self.done()
            except AlreadyDoneError:
                self.finished = True
            except LoomError:
                if not self.keep:
                    try:
                        self.unregister()
                    except LoomError:
                        pass
                raise
        if not self.keep:
            self.unregister()

    def flows_announce(self, announces: Sequence[Announce]) -> int:
        return self.client.flows_announce(announces)

    def announce(self, coflow_id: int, flow: Flow) -> None:
        """Announces one flow (with its tuple) of one of the job's coflows."""
        self.client.flows_announce([Announce(coflow_id, flow)])

    def socket_announce(self, sock, coflow_id: int, hosts=None, bytes: int = 0) -> None:
        self.client.socket_announce(sock, coflow_id, hosts, bytes)

    def coflow_done(self, coflow_id: int) -> None:
        self.client.coflow_done(coflow_id)

    def done(self) -> None:
        """Client.job_done() for this job."""
        self.client.job_done(self.id)
        self.finished = True

    def unregister(self) -> None:
        """Client.job_unregister() for this job; leaving the ``with`` then does nothing more."""
        self.client.job_unregister(self.id)
        self.registered = False
