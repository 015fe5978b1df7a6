// SPDX-License-Identifier: MIT

/// `{"random": {...}}`: uniform in `min...max`, whole numbers when `integer`.
///
/// The generator is injected: tests pass a fixed seed and get the same sequence every run.
public final class RandomSource: ValueSource {
    public let min: Double
    public let max: Double
    public let integer: Bool
    private var generator: SeededGenerator

    public init(min: Double, max: Double, integer: Bool, generator: SeededGenerator = .fromKernel()) {
        precondition(min <= max, "validated by the configuration")
        self.min = min
        self.max = max
        self.integer = integer
        self.generator = generator
    }

    public func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void) {
        let value: Double
        if integer {
            value = Double(Int64.random(in: Int64(min)...Int64(max), using: &generator))
        } else {
            value = Double.random(in: min...max, using: &generator)
        }
        done(.success(.number(value)))
    }
}
