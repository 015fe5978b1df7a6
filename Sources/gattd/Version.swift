// SPDX-License-Identifier: MIT

/// gattd's version, reported by `org.gattd.Manager1.GetStatus` and `gattctl status`.
let gattdVersion = "0.4.0-dev"
