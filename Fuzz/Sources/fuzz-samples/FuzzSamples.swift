import FuzzSupport
import RefreshEngine

@testable import RefreshServer

/// A samples POST body: the JSON reader, then the sample decoder, then the engine. A body
/// is either refused with a 4xx that names what is wrong, or gives samples a real page
/// could measure, which every preset's engine takes without leaving its ranges.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSamples(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    guard let body = parseBody(bytes) else { return 0 }
    let maxCount = 64
    let samples: [ValidSample]
    do {
        samples = try SampleDecoding.decode(body, maxCount: maxCount)
    } catch {
        checkRefusal(error, context: "samples")
        return 0
    }
    invariant(samples.count <= maxCount, "\(samples.count) samples decoded")
    for sample in samples {
        invariant(sample.seq >= 0, "seq \(sample.seq)")
        invariant(sample.t.isFinite && sample.t >= 0, "t \(sample.t)")
        invariant(sample.y.isFinite && abs(sample.y) <= Sample.largestLength, "y \(sample.y)")
        for height in [sample.contentHeight, sample.viewportHeight].compactMap({ $0 }) {
            invariant(height.isFinite && (0...Sample.largestLength).contains(height), "height \(height)")
        }
    }
    for preset in Preset.allCases {
        var engine = RefreshEngine(config: preset.config)
        do {
            let effects = try engine.samplesReceived(samples)
            checkState(engine.gestureState, preset: preset)
            if let state = effects.state { checkState(state, preset: preset) }
        } catch {
            invariant(false, "\(preset): a decoded sample was refused by the engine: \(error)")
        }
    }
    return 0
}

private func checkState(_ state: GestureState, preset: Preset) {
    invariant((0...1).contains(state.pull), "\(preset): pull \(state.pull)")
    invariant((0...180).contains(state.rotation), "\(preset): rotation \(state.rotation)")
    invariant(state.distance.isFinite && state.distance >= 0, "\(preset): distance \(state.distance)")
    invariant(state.indicatorOffset.isFinite, "\(preset): indicatorOffset \(state.indicatorOffset)")
    invariant(state.reveal.isFinite, "\(preset): reveal \(state.reveal)")
}
