// SPDX-License-Identifier: MIT
print("gattctl: not yet")
