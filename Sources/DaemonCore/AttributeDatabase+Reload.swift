// SPDX-License-Identifier: MIT

public import BLEModel

extension AttributeDatabase {
    /// After a reload rebuilt the tree: copies into this (new) database the values of
    /// `old`'s attributes that a central or a program wrote, where they still fit by the
    /// state file's restore rules (same id, same kind, same UUID, length within the new
    /// bounds). Copied values count as written (origin `.restored`); attributes nobody
    /// wrote keep the new configuration's value.
    ///
    /// - Returns: the written values that were not copied, each with the reason.
    @discardableResult
    public func carryOver(from old: AttributeDatabase) -> [DroppedValue] {
        old.attributes.filter(\.hasBeenWritten).compactMap { previous in
            restoreValue(previous.value, id: previous.id, uuid: previous.uuid, isCharacteristic: previous.isCharacteristic)
                .map { DroppedValue(id: previous.id, reason: $0) }
        }
    }

    /// The one rule for putting back an earlier value, used after a restart (the state
    /// file, `Persistence.restore`) and after a reload (`carryOver`): the attribute `id`
    /// must still exist, be of the same kind, still be kept (`keeps`), have the same UUID
    /// and take the length. The value is set with origin `.restored`.
    ///
    /// - Returns: nil when set, else why not (`no longer defined`, `is now a descriptor`,
    ///   `no longer persistent`, `UUID changed from 2a19 to 2a1a`, `length 3 is outside 1...2`).
    public func restoreValue(
        _ value: [UInt8], id: String, uuid: BluetoothUUID, isCharacteristic: Bool,
        keeps: (Attribute) -> Bool = { _ in true }
    ) -> String? {
        guard let attribute = self[id] else { return "no longer defined" }
        guard attribute.isCharacteristic == isCharacteristic else {
            return "is now a \(attribute.isCharacteristic ? "characteristic" : "descriptor")"
        }
        guard keeps(attribute) else { return "no longer persistent" }
        guard attribute.uuid == uuid else {
            return "UUID changed from \(uuid.shortForm) to \(attribute.uuid.shortForm)"
        }
        guard case .success = set(attribute, to: value, origin: .restored) else {
            return "length \(value.count) is outside \(attribute.minLength)...\(attribute.maxLength)"
        }
        return nil
    }

    /// A reload that kept the tree changed the configured value of `attribute`: it becomes
    /// the new `initialValue`, and the current value too unless the attribute has been
    /// written (origin `.configuration`, so subscribers are notified and a persistent
    /// value is saved).
    ///
    /// - Returns: whether the current value was replaced; false when the attribute was
    ///   written or `bytes` is outside its length bounds (the diff comes from a validated
    ///   configuration, so that does not happen in practice).
    @discardableResult
    public func redefineInitialValue(_ attribute: Attribute, to bytes: [UInt8]) -> Bool {
        guard (attribute.minLength...attribute.maxLength).contains(bytes.count) else { return false }
        attribute.initialValue = bytes
        guard !attribute.hasBeenWritten else { return false }
        set(attribute, to: bytes, origin: .configuration)
        return true
    }
}
