// SPDX-License-Identifier: MIT

/// gattd's version: the one place it is written. `gattd --version`, `gattctl --version`,
/// `GetStatus`, and the Debian package (the Makefile and scripts/make-deb read this line)
/// all take it from here.
public let gattdVersion = "0.5.0"
