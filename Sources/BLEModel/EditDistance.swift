// SPDX-License-Identifier: MIT

/// "did you mean" support: Levenshtein distance over Unicode scalars.
enum EditDistance {
    static func between(_ a: String, _ b: String) -> Int {
        let left = Array(a.unicodeScalars)
        let right = Array(b.unicodeScalars)
        if left.isEmpty { return right.count }
        var previous = Array(0...right.count)
        for (i, x) in left.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: right.count)
            for (j, y) in right.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[right.count]
    }

    /// The closest candidate at distance ≤ 2 (first in `candidates` order on ties).
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = between(word.lowercased(), candidate.lowercased())
            if distance <= 2, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// ` (did you mean "x"?)` or the empty string.
    static func hint(for word: String, among candidates: [String]) -> String {
        suggestion(for: word, among: candidates).map { " (did you mean \"\($0)\"?)" } ?? ""
    }
}
