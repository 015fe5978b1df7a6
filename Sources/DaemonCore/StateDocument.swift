// SPDX-License-Identifier: MIT

public import BLEModel

/// Everything gattd keeps across restarts, as it is written to `state.json`.
///
/// Version 1 holds the values of persistent characteristics and descriptors (each with the
/// UUID and length bounds it had when saved, so a changed definition can be detected),
/// value-source state such as counters, and each advertisement's on/off state. Keys are
/// the ids from the service definition. Version 2 adds `advertisementData`: advertising
/// data changed at run time and kept across restarts. A document without it is written as
/// version 1, so older builds keep reading it. Version 3 adds `handles`: the ATT handles
/// bluetoothd gave the attributes (`AttributeHandles`), requested again at the next
/// registration; a document with handles is version 3, one without keeps the older
/// number. Each version's reader accepts exactly its shape, except that a bad `handles`
/// section drops only the handles (`discardedHandles` says why), never the values.
public struct StateDocument: Sendable, Equatable {
    /// The newest version this build writes and reads.
    public static let currentVersion = 3

    /// One saved attribute value and enough of its definition to know whether it still fits.
    public struct SavedValue: Sendable, Equatable {
        public var uuid: BluetoothUUID
        public var value: [UInt8]
        public var minLength: Int
        public var maxLength: Int

        public init(uuid: BluetoothUUID, value: [UInt8], minLength: Int, maxLength: Int) {
            self.uuid = uuid
            self.value = value
            self.minLength = minLength
            self.maxLength = maxLength
        }
    }

    /// The state of one value source.
    public struct SavedSource: Sendable, Equatable {
        public var counter: Int64

        public init(counter: Int64) {
            self.counter = counter
        }
    }

    /// Characteristic id -> saved value.
    public var characteristics: [String: SavedValue]
    /// Descriptor id -> saved value.
    public var descriptors: [String: SavedValue]
    /// Value source id (the characteristic it updates) -> its state.
    public var sources: [String: SavedSource]
    /// Advertisement id -> whether it was enabled.
    public var advertisements: [String: Bool]
    /// Advertisement id -> the data changes kept across restarts, as the canonical JSON
    /// text of `AdvertisementChanges` (version 2).
    public var advertisementData: [String: String] = [:]

    /// The ATT handles of the attributes as bluetoothd last placed them (version 3).
    public var handles = AttributeHandles()
    /// Set when reading: why the file's `handles` were dropped (the rest was kept).
    public var discardedHandles: StateDecodingError?

    /// The version this document is written as: the oldest that holds its sections.
    public var version: Int { !handles.isEmpty ? 3 : advertisementData.isEmpty ? 1 : 2 }

    public init(
        characteristics: [String: SavedValue] = [:], descriptors: [String: SavedValue] = [:],
        sources: [String: SavedSource] = [:], advertisements: [String: Bool] = [:]
    ) {
        self.characteristics = characteristics
        self.descriptors = descriptors
        self.sources = sources
        self.advertisements = advertisements
    }
}
