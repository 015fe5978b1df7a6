// SPDX-License-Identifier: MIT

public import SystemCalls

/// A system call needed to set up the loop failed (`operation` e.g. `epoll_create1`).
public typealias LoopError = SystemCallError
