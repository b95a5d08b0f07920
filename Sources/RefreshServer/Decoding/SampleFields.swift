import RefreshEngine

/// A sample's members, declared once: their names, what each holds, which are required and
/// what the others default to. The full reader (any body, with a refusal that names the
/// member) and the plain reader of the hot path (one sample of plain members, or `nil`)
/// both read by this table into a ``SampleDraft``, so they take the same bodies as the same
/// samples. In the order the full reader checks them, which is the order its refusals follow.
enum SampleField: String, CaseIterable, Sendable {
    case seq, y, phase, t, contentHeight, viewportHeight, input

    enum Value {
        /// A whole number a JSON number carries exactly.
        case wholeNumber
        /// A finite number.
        case number
        /// One of ``Sample/Phase``'s names.
        case phase
        /// One of ``Sample/Input``'s names.
        case input
    }

    var value: Value {
        switch self {
        case .seq: .wholeNumber
        case .phase: .phase
        case .input: .input
        case .y, .t, .contentHeight, .viewportHeight: .number
        }
    }

    /// What a required member is said to be when it is missing; `nil` for an optional one.
    var required: String? {
        switch self {
        case .seq: "a whole number"
        case .y: "a number"
        case .phase, .t, .contentHeight, .viewportHeight, .input: nil
        }
    }

    /// The member's bit in a set of members already read.
    var bit: UInt8 {
        switch self {
        case .seq: 1
        case .y: 2
        case .phase: 4
        case .t: 8
        case .contentHeight: 16
        case .viewportHeight: 32
        case .input: 64
        }
    }

    static let names = Set(allCases.map(\.rawValue))
}

/// The members of a sample as they are read, and the sample they make.
struct SampleDraft {
    var seq: Int?
    var y: Double?
    var phase: Sample.Phase?
    var t: Double?
    var contentHeight: Double?
    var viewportHeight: Double?
    var input: Sample.Input?

    /// Sets a member of ``SampleField/Value/number`` or ``SampleField/Value/wholeNumber``
    /// (already checked to be whole).
    mutating func set(_ field: SampleField, _ number: Double) {
        switch field {
        case .seq: seq = Int(number)
        case .y: y = number
        case .t: t = number
        case .contentHeight: contentHeight = number
        case .viewportHeight: viewportHeight = number
        case .phase, .input: break
        }
    }

    /// The first required member not read, in the table's order.
    var missing: SampleField? {
        if seq == nil { return .seq }
        if y == nil { return .y }
        return nil
    }

    /// The sample, its optional members defaulted (`t` 0, `phase` drag); `nil` while a
    /// required one is missing.
    var sample: Sample? {
        guard let seq, let y else { return nil }
        return Sample(seq: seq, t: t ?? 0, y: y, phase: phase ?? .drag, contentHeight: contentHeight, viewportHeight: viewportHeight, input: input)
    }
}
