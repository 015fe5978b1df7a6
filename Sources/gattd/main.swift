// SPDX-License-Identifier: MIT
print("gattd: not yet")
