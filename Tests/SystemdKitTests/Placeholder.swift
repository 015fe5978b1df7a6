// SPDX-License-Identifier: MIT
// Placeholder so the target builds before it has code; delete when the first real file lands.
enum SystemdKitTestsPlaceholder {}
