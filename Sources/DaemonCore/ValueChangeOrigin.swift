// SPDX-License-Identifier: MIT

/// Who changed a value: decides whether it counts as written and how it is logged.
public enum ValueChangeOrigin: Sendable, Equatable {
    /// A write from a central, through bluetoothd (`device` is its object path if known).
    case central(device: String?)
    /// A program on the board (the control API).
    case control
    /// A value source on a timer.
    case timer(forceNotify: Bool)
    /// Loaded from the state file at start, or carried over from before a reload.
    case restored
    /// A reload changed the configured value of an attribute nobody had written.
    case configuration

    var countsAsWrite: Bool {
        switch self {
        case .central, .control, .restored: return true
        case .timer, .configuration: return false
        }
    }

    var forcesNotification: Bool {
        if case .timer(let force) = self { return force }
        return false
    }
}
