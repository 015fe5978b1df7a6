// SPDX-License-Identifier: MIT

Gattctl.mainWithDocumentedExitCodes()
