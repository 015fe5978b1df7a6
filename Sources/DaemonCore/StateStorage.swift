// SPDX-License-Identifier: MIT

/// Where `Persistence` saves documents: `StateStore` in the daemon, a double in tests.
public protocol StateStorage: AnyObject {
    /// Makes `document` durable: when this returns, a power cut keeps it; when it throws,
    /// the previously saved document is still the one on disk (except when only the final
    /// fsync of the directory failed: then either document may survive a power cut).
    func save(_ document: StateDocument) throws(StateStoreError)
}
