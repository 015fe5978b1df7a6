// SPDX-License-Identifier: MIT

/// `text` as a JSON string literal (RFC 8259): quotes, backslashes and control characters
/// escaped, everything else as is. Used wherever gattd writes JSON (state file, gattctl).
public func jsonQuoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if scalar.value < 0x20 {
                out += "\\u00" + lowercaseHex([UInt8(scalar.value)])
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    out += "\""
    return out
}
