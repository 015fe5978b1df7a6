# SPDX-License-Identifier: MIT
"""systemd's side of sd_notify(3) for the tests: a datagram socket the test owns.

gattd gets NOTIFY_SOCKET=@<name> (the abstract namespace, so no path length limit
and nothing to clean up). Every datagram is kept, in arrival order, as a Message
(its KEY=VALUE assignments plus the CLOCK_MONOTONIC time it was read). A thread
reads the socket as datagrams arrive, as systemd does: a Unix datagram socket holds
only a few unread datagrams (net.unix.max_dgram_qlen), and gattd's sd_notify blocks
when they are not read. Waits are on a condition with a deadline, never sleeps.
"""

import os
import select
import socket
import threading
import time
import uuid


class Message(dict):
    """One datagram's assignments; `received_us` is time.monotonic_ns() // 1000 on receipt."""

    def __init__(self, data, received_us):
        super().__init__()
        self.raw = data.decode(errors="replace")
        for line in self.raw.split("\n"):
            key, sep, value = line.partition("=")
            if sep:
                self[key] = value
        self.received_us = received_us

    def __repr__(self):
        return "Message(%r)" % self.raw


class NotifySocket:
    def __init__(self):
        self.name = "gattd-test-%d-%s" % (os.getpid(), uuid.uuid4().hex[:12])
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name)
        self.messages = []
        self.cursor = 0
        self.changed = threading.Condition()
        self.stop_r, self.stop_w = os.pipe()
        self.reader = threading.Thread(target=self._read, name="NotifySocket", daemon=True)
        self.reader.start()

    def env(self, **extra):
        env = {"NOTIFY_SOCKET": "@" + self.name}
        env.update(extra)
        return env

    def _read(self):
        while True:
            ready, _, _ = select.select([self.sock, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            data = self.sock.recv(65536)
            with self.changed:
                self.messages.append(Message(data, time.monotonic_ns() // 1000))
                self.changed.notify_all()

    def wait_for(self, predicate, timeout):
        """The next message (after the previous match) for which predicate is true, or None.

        Messages before it stay in `messages` for order checks; the cursor moves past it.
        """
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for index in range(self.cursor, len(self.messages)):
                    if predicate(self.messages[index]):
                        self.cursor = index + 1
                        return self.messages[index]
                self.cursor = len(self.messages)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.changed.wait(remaining)

    def wait_key(self, key, value="1", timeout=10):
        return self.wait_for(lambda m: m.get(key) == value, timeout)

    def index(self, message):
        return next(i for i, m in enumerate(self.messages) if m is message)

    def drain(self, timeout=0.0):
        """Waits `timeout` for more messages (0: takes only what has arrived)."""
        self.wait_for(lambda m: False, timeout)

    def close(self):
        os.write(self.stop_w, b"x")
        self.reader.join(5)
        self.sock.close()
        os.close(self.stop_r)
        os.close(self.stop_w)
