// SPDX-License-Identifier: MIT

/// What a program's handler takes of an attribute: the names `RegisterHandler`'s
/// `operations` option lists (docs/control-api.md). The daemon turns a set of them into
/// `DaemonCore.HandlerOperations`; the names are spelt here once.
public enum ControlHandlerOperation: String, CaseIterable, Sendable {
    case read
    case write

    /// Both: what `RegisterHandler` claims without an `operations` option.
    public static let all = Set(allCases)
}
