"""A private network for the benchmarks that time an unknown host: no DNS query leaves the machine (issue 38).

`enter()` re-runs the calling benchmark in new user, network and mount namespaces (`unshare -rnm`, no privilege
needed where user namespaces are allowed). There, only loopback exists, /etc/resolv.conf is replaced (a bind mount
seen by this process tree only) by `nameserver 127.0.0.1`, and a DNS server in this process answers every question
on 127.0.0.1:53 with NXDOMAIN ("no such name"), as the real resolver answers a `.invalid` name. paictl and its peer
(kubectl, curl) run in the same namespace and resolve through the same server, so both see the same answer and
the comparison holds. Where no namespace can be made, `enter()` returns False and the caller leaves the unknown-host
case out, saying so, rather than send a query.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

_INSIDE = "PAICTL_BENCH_PRIVATE_NETWORK"


def enter() -> bool:
    """True inside the private network (the DNS server started); else re-executes the benchmark inside one (no
    return), or returns False when no namespace can be made here."""
    if os.environ.get(_INSIDE) == "inside":
        _start_inside()
        return True
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rnm", "true"], capture_output=True).returncode != 0:
        print("loopback_dns: no network namespace can be made here (unshare -rnm); the unknown-host case is left "
              "out", file=sys.stderr)
        return False
    os.environ[_INSIDE] = "inside"
    sys.stdout.flush()
    os.execv(unshare, [unshare, "-rnm", "--", sys.executable, *sys.argv])
    return False  # not reached


def _start_inside() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    handle, resolv = tempfile.mkstemp(prefix="resolv.", suffix=".conf")
    with os.fdopen(handle, "w") as out:
        out.write("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
    subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 53))
    tcp.listen(16)
    threading.Thread(target=_serve_udp, args=(udp,), daemon=True).start()
    threading.Thread(target=_serve_tcp, args=(tcp,), daemon=True).start()


def no_such_name(query: bytes) -> bytes:
    """The NXDOMAIN answer to a DNS query (RFC 1035 4.1): its id and question, QR and RA set, RCODE 3."""
    if len(query) < 12:
        return b""
    question_end = 12
    while question_end < len(query) and query[question_end] != 0:
        question_end += query[question_end] + 1
    question_end += 5  # the root label's zero, QTYPE, QCLASS
    flags = 0x8000 | (query[2] & 0x79) << 8 | 0x0080 | 3  # QR, the query's opcode and RD, RA, NXDOMAIN
    return query[:2] + flags.to_bytes(2, "big") + b"\x00\x01\x00\x00\x00\x00\x00\x00" + query[12:question_end]


def _serve_udp(sock: socket.socket) -> None:
    while True:
        query, client = sock.recvfrom(4096)
        answer = no_such_name(query)
        if answer:
            sock.sendto(answer, client)


def _serve_tcp(sock: socket.socket) -> None:
    while True:
        connection, _ = sock.accept()
        with connection:
            try:
                size = int.from_bytes(connection.recv(2), "big")
                answer = no_such_name(connection.recv(size))
                connection.sendall(len(answer).to_bytes(2, "big") + answer)
            except OSError:
                pass
