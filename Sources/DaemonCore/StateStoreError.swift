// SPDX-License-Identifier: MIT

public import SystemCalls

/// A failed system call while reading or writing the state directory: the system-call
/// layer's error (`operation` is `open`, `write`, `fsync`, `close`, `rename`,
/// `fsync directory` or `create directory`; `path` the file or directory).
///
/// The disk-full, read-only and permission cases are `code` ENOSPC, EROFS and EACCES/EPERM.
public typealias StateStoreError = SystemCallError
