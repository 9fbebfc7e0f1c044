#!/usr/bin/env python3
"""tcp_relay.py — a TCP relay for pfi's tests (standard library only).

    python3 tcp_relay.py --port-file F --to-port-file G

Binds 127.0.0.1 port 0, writes its port to F (atomically), and relays each
connection to 127.0.0.1:PORT where PORT is read from G when the connection
comes (waiting up to 10 s for G). It stands in for the reverse proxy a site
puts before its VEN's webhook: the callback URL a subscription names must be
known before the controller starts, and the controller binds port 0 (its
port is known only once it runs). Both directions are copied until either
side closes."""

import argparse
import os
import socket
import sys
import threading
import time


def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def target(path):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--to-port-file", required=True)
    a = ap.parse_args()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.replace(a.port_file + ".tmp", a.port_file)
    while True:
        c, _ = srv.accept()
        port = target(a.to_port_file)
        if port is None:
            sys.stderr.write("tcp_relay: %s has no port\n" % a.to_port_file)
            c.close()
            continue
        try:
            u = socket.create_connection(("127.0.0.1", port), timeout=10)
            u.settimeout(None)
        except OSError as e:
            sys.stderr.write("tcp_relay: 127.0.0.1:%d: %s\n" % (port, e))
            c.close()
            continue
        for x, y in ((c, u), (u, c)):
            threading.Thread(target=pipe, args=(x, y), daemon=True).start()


if __name__ == "__main__":
    main()
