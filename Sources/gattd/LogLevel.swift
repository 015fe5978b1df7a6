// SPDX-License-Identifier: MIT

import Logging

func parseLogLevel(_ text: String) -> Logger.Level? {
    Logger.Level(rawValue: text.lowercased())
}
