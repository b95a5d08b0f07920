import RefreshClient
import RefreshEngine
import Testing

@Suite struct ScrollSamplerTests {
    @Test func aFingerOnTheListDragsAndItsLiftIsTheRelease() {
        var sampler = ScrollSampler()
        let pulled = [-20.0, -60, -90].compactMap {
            sampler.scrolled(offset: $0, contentHeight: 2000, viewportHeight: 800, isDragging: true)
        }
        #expect(pulled.map(\.phase) == [.drag, .drag, .drag])
        #expect(pulled.map(\.y) == [-20, -60, -90])
        let lifted = sampler.scrolled(offset: -88, contentHeight: 2000, viewportHeight: 800, isDragging: false)
        #expect(lifted?.phase == .release)
        #expect(lifted?.y == -88)
        let momentum = sampler.scrolled(offset: -40, contentHeight: 2000, viewportHeight: 800, isDragging: false)
        #expect(momentum?.phase == .scroll)
    }

    @Test func aReleaseIsSampledOnceWhicheverCallbackSaysItFirst() {
        var sampler = ScrollSampler()
        _ = sampler.scrolled(offset: -90, contentHeight: 2000, viewportHeight: 800, isDragging: true)
        // UIKit: scrollViewWillEndDragging, then scrollViewDidEndDragging, then the offsets.
        let released = sampler.released(offset: -90, contentHeight: 2000, viewportHeight: 800)
        #expect(released?.phase == .release)
        #expect(released?.y == -90)
        #expect(sampler.released(offset: -90, contentHeight: 2000, viewportHeight: 800) == nil)
        #expect(sampler.scrolled(offset: -70, contentHeight: 2000, viewportHeight: 800, isDragging: false)?.phase == .scroll)
        // No finger, no release.
        var untouched = ScrollSampler()
        #expect(untouched.released(offset: 0, contentHeight: 2000, viewportHeight: 800) == nil)
    }

    @Test func aReleaseAtTheSameOffsetIsStillSampled() {
        var sampler = ScrollSampler()
        _ = sampler.scrolled(offset: -90, contentHeight: 2000, viewportHeight: 800, isDragging: true)
        let lifted = sampler.scrolled(offset: -90, contentHeight: 2000, viewportHeight: 800, isDragging: false)
        #expect(lifted?.phase == .release)
    }

    @Test func theSameGeometryTwiceIsNotPostedTwice() {
        var sampler = ScrollSampler()
        #expect(sampler.scrolled(offset: 300, contentHeight: 2000, viewportHeight: 800, isDragging: false) != nil)
        #expect(sampler.scrolled(offset: 300, contentHeight: 2000, viewportHeight: 800, isDragging: false) == nil)
        // New items at the end: the same offset, a taller list, which the server must hear of.
        #expect(sampler.scrolled(offset: 300, contentHeight: 2600, viewportHeight: 800, isDragging: false)?.contentHeight == 2600)
        #expect(sampler.scrolled(offset: 300, contentHeight: 2600, viewportHeight: 700, isDragging: false)?.viewportHeight == 700)
        // A finger on the list at the same offset is a drag the engine must see.
        #expect(sampler.scrolled(offset: 300, contentHeight: 2600, viewportHeight: 700, isDragging: true)?.phase == .drag)
    }

    @Test func everySampleCarriesBothHeights() {
        var sampler = ScrollSampler()
        let samples = [(-10.0, true), (-30, true), (-30, false), (0, false)].compactMap {
            sampler.scrolled(offset: $0.0, contentHeight: 2000, viewportHeight: 800, isDragging: $0.1)
        }
        #expect(samples.count == 4)
        #expect(samples.allSatisfy { $0.contentHeight == 2000 && $0.viewportHeight == 800 })
    }

    @Test func theTopInsetIsTheRestPosition() {
        // Under a large navigation title UIKit rests at contentOffset.y == -91.
        var sampler = ScrollSampler(topInset: 91)
        #expect(sampler.scrolled(offset: -91, contentHeight: 2000, viewportHeight: 700, isDragging: false)?.y == 0)
        #expect(sampler.scrolled(offset: -171, contentHeight: 2000, viewportHeight: 700, isDragging: true)?.y == -80)
    }

    @Test func theSamplesDriveTheEngineToARefresh() throws {
        var sampler = ScrollSampler()
        var engine = RefreshEngine(config: Preset.standard.config)
        var started: Job?
        var seq = 0
        let reports: [(Double, Bool)] = [(-20, true), (-60, true), (-90, true), (-90, false), (-40, false), (0, false)]
        for (offset, dragging) in reports {
            guard var sample = sampler.scrolled(offset: offset, contentHeight: 2000, viewportHeight: 800, isDragging: dragging) else {
                continue
            }
            seq += 1
            sample.seq = seq
            started = try engine.sampleReceived(sample).start ?? started
        }
        #expect(started?.kind == .refresh)
        #expect(engine.gestureState.phase == .refreshing)
    }
}
