"""The warm engine's messages: a 4-byte length, then a JSON object; a message may carry file
descriptors (SCM_RIGHTS), the caller's standard streams."""
from __future__ import annotations

import json
import socket
import struct

MAX_MESSAGE = 1 << 24  # a command line with its environment is a few KB; anything near this is not ours
MAX_FDS = 3


def send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode("utf-8")
    frame = struct.pack(">I", len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], fds)
        sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)


def receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """The next message and the descriptors that came with it; (None, []) when the peer closed."""
    head, fds = _exactly(sock, 4, want_fds=True)
    if head is None:
        return None, fds
    size = struct.unpack(">I", head)[0]
    if size > MAX_MESSAGE:
        raise ValueError(f"a message of {size} bytes")
    body, more = _exactly(sock, size, want_fds=not fds)
    if body is None:
        return None, fds + more
    return json.loads(body.decode("utf-8")), fds + more


def _exactly(sock: socket.socket, n: int, want_fds: bool) -> tuple[bytes | None, list[int]]:
    data, fds = b"", []
    while len(data) < n:
        if want_fds and not fds:
            chunk, got, _flags, _addr = socket.recv_fds(sock, n - len(data), MAX_FDS)
            fds += got
        else:
            chunk = sock.recv(n - len(data))
        if not chunk:
            return None, fds
        data += chunk
    return data, fds
