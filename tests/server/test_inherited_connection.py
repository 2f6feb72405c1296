"""A run's child lets go of the py4j connections it inherits from the warm engine without shutting
their sockets down: the engine goes on using the same sockets (a shutdown from the child once
ended the engine's connection to the JVM and stopped the runs beside it)."""
from __future__ import annotations

import socket
from types import SimpleNamespace

from py4j.clientserver import ClientServerConnection

from tefq.server.runner import let_go


def test_letting_go_leaves_the_engines_socket_open() -> None:
    engine_side, jvm_side = socket.socketpair()
    child_copy = engine_side.dup()  # what a forked child holds: the same socket, its own descriptor
    connection = SimpleNamespace(socket=child_copy, stream=child_copy.makefile("rb"))
    let_go(connection)
    assert connection.socket is None and connection.stream is None
    ClientServerConnection.close(connection)  # what py4j's __del__ then does: nothing left to close
    engine_side.sendall(b"c\n")
    assert jvm_side.recv(2) == b"c\n"
    jvm_side.sendall(b"y\n")
    assert engine_side.recv(2) == b"y\n"
    engine_side.close()
    jvm_side.close()


def test_py4js_own_close_would_end_the_engines_connection() -> None:
    """The failure let_go avoids, shown on the same sockets."""
    engine_side, jvm_side = socket.socketpair()
    child_copy = engine_side.dup()
    connection = SimpleNamespace(socket=child_copy, stream=child_copy.makefile("rb"), initiated_from_client=True,
                                 python_server=None)
    ClientServerConnection.close(connection)
    assert jvm_side.recv(2) == b""  # the JVM's side sees the end of the connection
    engine_side.close()
    jvm_side.close()
