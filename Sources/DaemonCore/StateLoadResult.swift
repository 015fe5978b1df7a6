// SPDX-License-Identifier: MIT

/// What `StateStore.load()` found.
public enum StateLoadResult: Sendable, Equatable {
    /// No state file: the first start, or the directory was emptied.
    case fresh
    case loaded(StateDocument)
    /// The file was truncated, corrupt, unreadable or from a newer gattd. It was renamed
    /// to `movedTo` for inspection (nil when even that failed) and gattd starts fresh.
    case damaged(reason: String, movedTo: String?)
}
