// SPDX-License-Identifier: MIT

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
        var dropped: [DroppedValue] = []
        for previous in old.attributes where previous.hasBeenWritten {
            guard let attribute = self[previous.id] else {
                dropped.append(DroppedValue(id: previous.id, reason: "no longer defined"))
                continue
            }
            guard attribute.isCharacteristic == previous.isCharacteristic else {
                dropped.append(
                    DroppedValue(
                        id: previous.id,
                        reason: "is now a \(attribute.isCharacteristic ? "characteristic" : "descriptor")"))
                continue
            }
            guard attribute.uuid == previous.uuid else {
                dropped.append(
                    DroppedValue(
                        id: previous.id,
                        reason: "UUID changed from \(previous.uuid.shortForm) to \(attribute.uuid.shortForm)"))
                continue
            }
            if case .failure = set(attribute, to: previous.value, origin: .restored) {
                dropped.append(
                    DroppedValue(
                        id: previous.id,
                        reason: "length \(previous.value.count) is outside "
                            + "\(attribute.minLength)...\(attribute.maxLength)"))
            }
        }
        return dropped
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
