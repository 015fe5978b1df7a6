// SPDX-License-Identifier: MIT
internal import CDBus

/// Runs `body` with an initialised C `DBusError`; if `body` left it set, converts it to
/// `DBusKit.DBusError`, frees it and throws. The only place that reads a C `DBusError`.
func withDBusError<T>(_ body: (UnsafeMutablePointer<CDBus.DBusError>) -> T) throws(DBusError) -> T {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    let result = body(&error)
    if dbus_error_is_set(&error) != 0 {
        let converted = DBusError(
            name: error.name.map { String(cString: $0) } ?? DBusError.Name.failed,
            message: error.message.map { String(cString: $0) } ?? ""
        )
        dbus_error_free(&error)
        throw converted
    }
    return result
}
