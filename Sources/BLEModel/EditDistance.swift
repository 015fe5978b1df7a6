// SPDX-License-Identifier: MIT

/// "did you mean" support: Levenshtein distance over Unicode scalars.
///
/// Only distances up to `suggestionLimit` matter, so the distance is computed within that
/// limit: strings whose lengths differ by more are not compared at all, and only the band
/// of cells within `limit` of the diagonal is filled, in two reused rows. An unknown key of
/// n scalars costs O(n) per candidate, not O(n × m) with two new arrays per row: with
/// every unknown key and flag compared against every allowed name, the unbounded form
/// made `gattd --check` on a long misspelt key take most of a second.
enum EditDistance {
    /// Suggestions are at most this many edits away.
    static let suggestionLimit = 2

    /// The distance between `a` and `b` when it is at most `limit`, else nil.
    static func between(_ a: String, _ b: String, limit: Int) -> Int? {
        let left = Array(a.unicodeScalars)
        let right = Array(b.unicodeScalars)
        guard abs(left.count - right.count) <= limit else { return nil }
        if left.isEmpty { return right.count }
        if right.isEmpty { return left.count }
        // Cells outside the band hold `beyond`; a row whose every cell is past the limit
        // ends the comparison.
        let beyond = limit + 1
        var previous = [Int](repeating: beyond, count: right.count + 1)
        var current = previous
        for j in 0...min(limit, right.count) { previous[j] = j }
        for i in 1...left.count {
            let low = max(1, i - limit)
            let high = min(right.count, i + limit)
            current[low - 1] = low == 1 ? min(i, beyond) : beyond
            var rowMinimum = current[low - 1]
            let x = left[i - 1]
            for j in low...high {
                let substitution = previous[j - 1] + (x == right[j - 1] ? 0 : 1)
                let cell = min(previous[j] + 1, current[j - 1] + 1, substitution)
                current[j] = cell
                rowMinimum = min(rowMinimum, cell)
            }
            if rowMinimum > limit { return nil }
            swap(&previous, &current)
        }
        let distance = previous[right.count]
        return distance <= limit ? distance : nil
    }

    /// The closest candidate at distance ≤ 2 (first in `candidates` order on ties).
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let lowered = word.lowercased()
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let limit = min(suggestionLimit, (best?.distance ?? Int.max) - 1)
            guard limit >= 0 else { break }
            if let distance = between(lowered, candidate.lowercased(), limit: limit) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// ` (did you mean "x"?)` or the empty string.
    static func hint(for word: String, among candidates: [String]) -> String {
        suggestion(for: word, among: candidates).map { " (did you mean \"\($0)\"?)" } ?? ""
    }
}
