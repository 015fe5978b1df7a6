// SPDX-License-Identifier: MIT

/// `text` as a JSON string literal (RFC 8259): quotes, backslashes and control characters
/// escaped, everything else as is. Used wherever gattd writes JSON (state file, gattctl).
public func jsonQuoted(_ text: String) -> String {
    doubleQuoted(text) { $0.value < 0x20 ? "\\u00" + lowercaseHex([UInt8($0.value)]) : nil }
}

/// `text` in double quotes with `"`, `\`, newline, tab and carriage return escaped as
/// `\"`, `\\`, `\n`, `\t`, `\r`, and every other character for which `escape` returns a
/// replacement written as that replacement.
public func doubleQuoted(_ text: String, escaping escape: (Unicode.Scalar) -> String?) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if let replacement = escape(scalar) {
                out += replacement
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    out += "\""
    return out
}
