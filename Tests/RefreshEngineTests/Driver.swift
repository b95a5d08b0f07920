import RefreshEngine

/// Drives an engine the way a page does: increasing `seq`, heights when they change.
struct Driver {
    var engine: RefreshEngine
    var seq = 0

    init(_ preset: Preset, hasMore: Bool = true) {
        engine = RefreshEngine(config: preset.config, hasMore: hasMore)
    }

    init(config: RefreshConfig, hasMore: Bool = true) {
        engine = RefreshEngine(config: config, hasMore: hasMore)
    }

    @discardableResult
    mutating func move(
        to y: Double, _ phase: Sample.Phase = .drag, content: Double? = nil, viewport: Double? = nil
    ) -> Effects {
        seq += 1
        let sample = Sample(seq: seq, t: Double(seq) * 16, y: y, phase: phase, contentHeight: content, viewportHeight: viewport)
        do {
            return try engine.sampleReceived(sample)
        } catch {
            fatalError("a valid sample was refused: \(error)")
        }
    }

    /// Pulls down (negative offsets) through each distance in turn.
    @discardableResult
    mutating func pull(_ distances: Double..., phase: Sample.Phase = .drag) -> Effects {
        var last = Effects.none
        for distance in distances { last = move(to: -distance, phase) }
        return last
    }

    var state: GestureState { engine.gestureState }
}

extension RequestResult {
    /// The job and effects of a request that started an action; `nil` when it did not, for
    /// `try #require`.
    var started: (job: Job, effects: Effects)? {
        guard case .started(let job, let effects) = self else { return nil }
        return (job, effects)
    }
}
