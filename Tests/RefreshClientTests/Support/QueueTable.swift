import Foundation
import RefreshEngine
import Testing

@testable import RefreshClient

/// `Tests/fixtures/sample-queue-cases.json`: the sample queue's rules as cases, walked by this
/// client's queue and by the page's (`Tests/browser/test_sample_queue.py`). Its `about` says
/// how a case reads.
struct QueueTable: Decodable, Sendable {
    /// A session's config as the server answers it, as far as a crossing is judged by it.
    struct Config: Decodable, Sendable {
        struct Edge: Decodable, Sendable {
            var enabled: Bool
            var threshold: RefreshConfig.Threshold
        }

        var top: Edge?
        var bottom: Edge?
        var baseline: RefreshConfig.Baseline

        var refreshConfig: RefreshConfig {
            var config = Preset.standard.config
            config.top.enabled = top?.enabled ?? false
            config.top.threshold = top?.threshold ?? config.top.threshold
            config.bottom.enabled = bottom?.enabled ?? false
            config.bottom.threshold = bottom?.threshold ?? config.bottom.threshold
            config.baseline = baseline
            return config
        }
    }

    /// `{"drag": -10, "contentHeight": 2000}`: a sample by its phase and offset, its heights
    /// when it has them, and once sent its `seq`.
    struct SampleSpec: Decodable, Sendable, Equatable, CustomStringConvertible {
        var seq: Int?
        var phase: Sample.Phase
        var y: Double
        var contentHeight: Double?
        var viewportHeight: Double?

        private enum Key: String, CodingKey, CaseIterable {
            case seq, drag, release, scroll, contentHeight, viewportHeight
        }

        init(_ sample: Sample) {
            seq = sample.seq
            phase = sample.phase
            y = sample.y
            contentHeight = sample.contentHeight
            viewportHeight = sample.viewportHeight
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            let phases = Sample.Phase.allCases.filter { container.contains(Key(rawValue: $0.rawValue)!) }
            guard phases.count == 1, let phase = phases.first, let key = Key(rawValue: phase.rawValue) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "one of drag, release, scroll"))
            }
            self.phase = phase
            y = try container.decode(Double.self, forKey: key)
            seq = try container.decodeIfPresent(Int.self, forKey: .seq)
            contentHeight = try container.decodeIfPresent(Double.self, forKey: .contentHeight)
            viewportHeight = try container.decodeIfPresent(Double.self, forKey: .viewportHeight)
        }

        /// The sample to push: its `seq` is the queue's to give.
        var sample: Sample {
            Sample(seq: 0, y: y, phase: phase, contentHeight: contentHeight, viewportHeight: viewportHeight)
        }

        var description: String {
            var parts = ["\(phase.rawValue) \(y)"]
            if let seq { parts.insert("#\(seq)", at: 0) }
            if let contentHeight { parts.append("content \(contentHeight)") }
            if let viewportHeight { parts.append("viewport \(viewportHeight)") }
            return parts.joined(separator: " ")
        }
    }

    /// `{"paced": [samples]}`: a request by its slot and its samples.
    struct Request: Decodable, Sendable, Equatable, CustomStringConvertible {
        var slot: SampleQueue.Slot
        var samples: [SampleSpec]

        init(_ request: SampleQueue.Request) {
            slot = request.slot
            samples = request.samples.map(SampleSpec.init)
        }

        init(from decoder: any Decoder) throws {
            let bySlot = try [String: [SampleSpec]](from: decoder)
            guard bySlot.count == 1, let (name, samples) = bySlot.first, let slot = SampleQueue.Slot(rawValue: name) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "one of paced, crossing, release"))
            }
            self.slot = slot
            self.samples = samples
        }

        var description: String { "\(slot.rawValue) [\(samples.map(\.description).joined(separator: ", "))]" }
    }

    struct Step: Decodable, Sendable, CustomStringConvertible {
        enum Input: Sendable {
            case push([SampleSpec])
            case time(Duration)
            case answer(Int, SampleQueue.Answer)
            case reset(Config?)
        }

        var input: Input
        var sent: [Request]
        var seqs: [Int]?
        var out: Int?
        var empty: Bool?

        private enum Key: String, CodingKey {
            case push, time, taken, notNow, ms, reset, config, sent, seqs, out, empty
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            if let samples = try container.decodeIfPresent([SampleSpec].self, forKey: .push) {
                input = .push(samples)
            } else if let time = try container.decodeIfPresent(Int.self, forKey: .time) {
                input = .time(.milliseconds(time))
            } else if let number = try container.decodeIfPresent(Int.self, forKey: .taken) {
                input = .answer(number, .taken)
            } else if let number = try container.decodeIfPresent(Int.self, forKey: .notNow) {
                input = .answer(number, .notNow(retryAfter: .milliseconds(try container.decode(Int.self, forKey: .ms))))
            } else if container.contains(.reset) {
                input = .reset(try container.decodeIfPresent(Config.self, forKey: .config))
            } else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a step without an input"))
            }
            sent = try container.decodeIfPresent([Request].self, forKey: .sent) ?? []
            seqs = try container.decodeIfPresent([Int].self, forKey: .seqs)
            out = try container.decodeIfPresent(Int.self, forKey: .out)
            empty = try container.decodeIfPresent(Bool.self, forKey: .empty)
        }

        var description: String {
            switch input {
            case .push(let samples): "push \(samples)"
            case .time(let time): "\(time) pass"
            case .answer(let number, .taken): "request \(number) taken"
            case .answer(let number, .notNow(let wait)): "request \(number) not now, \(wait)"
            case .reset: "reset"
            }
        }
    }

    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        var name: String
        var config: Config?
        var steps: [Step]

        var testDescription: String { name }
    }

    struct Watch: Decodable, Sendable, CustomTestStringConvertible {
        var name: String
        var config: Config
        var samples: [SampleSpec]
        var crosses: [Bool]

        var testDescription: String { name }
    }

    var config: Config
    var watch: [Watch]
    var cases: [Case]

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fixtures/sample-queue-cases.json")

    static let loaded = Result { try JSONDecoder().decode(QueueTable.self, from: Data(contentsOf: file)) }
}
