// SPDX-License-Identifier: MIT

public import DaemonCore

/// The test kit's one in-memory `StateStorage`: keeps every document saved, in order, and
/// fails each save with `failure` while it is set (nothing is kept then). `onSave` hears
/// each document kept, for a test that logs events in order.
public final class MemoryStorage: StateStorage {
    public private(set) var saved: [StateDocument] = []
    public var failure: StateStoreError?
    public var onSave: ((StateDocument) -> Void)?

    public init() {}

    public func save(_ document: StateDocument) throws(StateStoreError) {
        if let failure { throw failure }
        saved.append(document)
        onSave?(document)
    }
}
