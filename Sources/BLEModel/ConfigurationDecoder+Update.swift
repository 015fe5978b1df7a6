// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    static let updateKeys = ["everyMs", "source", "encode", "whileUnsubscribed", "notifyUnchanged"]
    static let sourceKinds = ["counter", "random", "file", "command"]
    static let writeHookKeys = ["argv", "timeoutMs", "decides"]
    /// Bounds for program timeouts (`onWrite`, command sources), in ms.
    static let timeoutRange: ClosedRange<Int64> = 1...60_000

    mutating func update(_ value: JSONValue, _ path: String) -> UpdateDefinition? {
        guard let object = context.object(value, path, allowed: Self.updateKeys) else { return nil }
        var everyMs: Int?
        if let value = object.required("everyMs", &context) {
            everyMs = context.integer(value, object.path("everyMs"), in: 1...86_400_000).map { Int($0) }
        }
        var source: UpdateSource?
        if let value = object.required("source", &context) { source = updateSource(value, object.path("source")) }
        var encode: ValueTemplate?
        var encodeOK = true
        if let value = object["encode"] {
            let encodePath = object.path("encode")
            if let segments = context.valueSegments(value, encodePath, allowSlots: true) {
                let template = ValueTemplate(segments: segments)
                if !template.hasSlot {
                    context.error(encodePath, "template has no \"$\" slot")
                    encodeOK = false
                } else if source?.format == .bytes {
                    context.error(encodePath, "a \"bytes\" source is used as is; remove \"encode\"")
                    encodeOK = false
                }
                encode = template
            } else {
                encodeOK = false
            }
        }
        var whileUnsubscribed = false
        if let value = object["whileUnsubscribed"] {
            whileUnsubscribed = context.bool(value, object.path("whileUnsubscribed")) ?? false
        }
        var notifyUnchanged = false
        if let value = object["notifyUnchanged"] {
            notifyUnchanged = context.bool(value, object.path("notifyUnchanged")) ?? false
        }
        guard let everyMs, let source, encodeOK else { return nil }
        if encode == nil {
            switch source.format {
            case .number: encode = .uint8Slot
            case .text: encode = .utf8Slot
            case .bytes: encode = nil
            }
        }
        return UpdateDefinition(
            everyMs: everyMs, source: source, encode: encode, whileUnsubscribed: whileUnsubscribed,
            notifyUnchanged: notifyUnchanged)
    }

    private mutating func updateSource(_ value: JSONValue, _ path: String) -> UpdateSource? {
        guard let object = context.object(value, path, allowed: Self.sourceKinds) else { return nil }
        guard object.members.count == 1, let member = object.members.first else {
            if value.objectValue?.count == object.members.count {
                context.error(path, "expected exactly one of \"counter\", \"random\", \"file\" or \"command\"")
            }
            return nil
        }
        let memberPath = object.path(member.key)
        switch member.key {
        case "counter": return counter(member.value, memberPath)
        case "random": return random(member.value, memberPath)
        case "file": return file(member.value, memberPath)
        default: return command(member.value, memberPath)
        }
    }

    private mutating func counter(_ value: JSONValue, _ path: String) -> UpdateSource? {
        guard let object = context.object(value, path, allowed: ["start", "step", "min", "max"]) else { return nil }
        let before = context.issues.count
        let all = Int64.min...Int64.max
        let min = object["min"].flatMap { context.integer($0, object.path("min"), in: all) } ?? 0
        let max = object["max"].flatMap { context.integer($0, object.path("max"), in: all) } ?? 255
        let step = object["step"].flatMap { context.integer($0, object.path("step"), in: all) } ?? 1
        let start = object["start"].flatMap { context.integer($0, object.path("start"), in: all) } ?? min
        guard context.issues.count == before else { return nil }
        if min > max {
            context.error(object.path("min"), "min \(min) is greater than max \(max)", at: context.position(of: path))
            return nil
        }
        if !(min...max).contains(start) {
            context.error(object.path("start"), "start \(start) is outside min...max (\(min)...\(max))")
            return nil
        }
        if step == 0 {
            context.error(object.path("step"), "step must not be 0")
            return nil
        }
        return .counter(start: start, step: step, min: min, max: max)
    }

    private mutating func random(_ value: JSONValue, _ path: String) -> UpdateSource? {
        guard let object = context.object(value, path, allowed: ["min", "max", "integer"]) else { return nil }
        let before = context.issues.count
        let min = object["min"].flatMap { context.number($0, object.path("min")) } ?? 0
        let max = object["max"].flatMap { context.number($0, object.path("max")) } ?? 255
        let integer = object["integer"].flatMap { context.bool($0, object.path("integer")) } ?? true
        guard context.issues.count == before else { return nil }
        if min > max {
            context.error(object.path("min"), "min \(min) is greater than max \(max)", at: context.position(of: path))
            return nil
        }
        if integer, min.rounded() != min || max.rounded() != max {
            context.error(path, "min and max must be whole numbers when \"integer\" is true")
            return nil
        }
        return .random(min: min, max: max, integer: integer)
    }

    private mutating func file(_ value: JSONValue, _ path: String) -> UpdateSource? {
        let keys = ["path", "format", "scale", "offset"]
        guard let object = context.object(value, path, allowed: keys) else { return nil }
        let before = context.issues.count
        let filePath = object.required("path", &context).flatMap { context.string($0, object.path("path")) }
        if let filePath, !filePath.hasPrefix("/") {
            context.error(object.path("path"), "\"\(filePath)\" is not an absolute path")
        }
        let format = object["format"].flatMap { choice($0, object.path("format"), SourceFormat.self) } ?? .number
        let scale = object["scale"].flatMap { context.number($0, object.path("scale")) } ?? 1
        let offset = object["offset"].flatMap { context.number($0, object.path("offset")) } ?? 0
        guard context.issues.count == before, let filePath else { return nil }
        return .file(path: filePath, format: format, scale: scale, offset: offset)
    }

    private mutating func command(_ value: JSONValue, _ path: String) -> UpdateSource? {
        guard let object = context.object(value, path, allowed: ["argv", "timeoutMs", "format"]) else { return nil }
        let before = context.issues.count
        let argv = object.required("argv", &context).flatMap { argumentVector($0, object.path("argv")) }
        let timeout = object["timeoutMs"].flatMap { context.integer($0, object.path("timeoutMs"), in: Self.timeoutRange) }
        var format = SourceFormat.number
        if let value = object["format"], let chosen = choice(value, object.path("format"), SourceFormat.self) {
            if chosen == .bytes {
                context.error(object.path("format"), "a command source reads \"number\" or \"text\", not \"bytes\"")
            }
            format = chosen
        }
        guard context.issues.count == before, let argv else { return nil }
        return .command(argv: argv, timeoutMs: Int(timeout ?? 1000), format: format)
    }

    mutating func writeHook(_ value: JSONValue, _ path: String) -> WriteHook? {
        guard let object = context.object(value, path, allowed: Self.writeHookKeys) else { return nil }
        let before = context.issues.count
        let argv = object.required("argv", &context).flatMap { argumentVector($0, object.path("argv")) }
        let timeout = object["timeoutMs"].flatMap { context.integer($0, object.path("timeoutMs"), in: Self.timeoutRange) }
        let decides = object["decides"].flatMap { context.bool($0, object.path("decides")) } ?? false
        guard context.issues.count == before, let argv else { return nil }
        return WriteHook(argv: argv, timeoutMs: Int(timeout ?? 1000), decides: decides)
    }

    /// A non-empty argument vector whose program name is not empty.
    private mutating func argumentVector(_ value: JSONValue, _ path: String) -> [String]? {
        guard let argv = context.strings(value, path) else { return nil }
        guard let program = argv.first else {
            context.error(path, "argv must name a program")
            return nil
        }
        if program.isEmpty {
            context.error("\(path)[0]", "program name must not be empty")
            return nil
        }
        return argv
    }
}
