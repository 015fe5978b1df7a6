// SPDX-License-Identifier: MIT

public import SystemCalls

/// A program that could not be started: `cannot start /usr/bin/foo: No such file or
/// directory (errno 2)`. `operation` is `pipe`, `start` or `pidfd_open`; `path` is
/// `argv[0]` (empty for `pipe`).
public typealias ChildProcessError = SystemCallError
