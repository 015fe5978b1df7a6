# SPDX-License-Identifier: MIT
"""systemd's side of sd_notify(3) for the tests: a datagram socket the test owns.

gattd gets NOTIFY_SOCKET=@<name> (the abstract namespace, so no path length limit
and nothing to clean up). Every datagram is kept, in arrival order, as a Message
(its KEY=VALUE assignments plus the CLOCK_MONOTONIC time it was read); waits are
select() with a deadline, never sleeps.
"""

import os
import select
import socket
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

    def env(self, **extra):
        env = {"NOTIFY_SOCKET": "@" + self.name}
        env.update(extra)
        return env

    def _receive(self, timeout):
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not ready:
            return False
        data = self.sock.recv(65536)
        self.messages.append(Message(data, time.monotonic_ns() // 1000))
        return True

    def wait_for(self, predicate, timeout):
        """The next message (after the previous match) for which predicate is true, or None.

        Messages before it stay in `messages` for order checks; the cursor moves past it.
        """
        deadline = time.monotonic() + timeout
        while True:
            for index in range(self.cursor, len(self.messages)):
                if predicate(self.messages[index]):
                    self.cursor = index + 1
                    return self.messages[index]
            self.cursor = len(self.messages)
            if not self._receive(deadline - time.monotonic()):
                return None

    def wait_key(self, key, value="1", timeout=10):
        return self.wait_for(lambda m: m.get(key) == value, timeout)

    def index(self, message):
        return next(i for i, m in enumerate(self.messages) if m is message)

    def drain(self, timeout=0.0):
        """Reads whatever arrives within `timeout` (0: only what is queued now)."""
        while self._receive(timeout):
            pass

    def close(self):
        self.sock.close()
