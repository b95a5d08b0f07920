import Foundation
import Testing

@testable import RefreshEngine

/// `"threshold": "fit"`: 20 % of the viewport's height, at most 148 and at least 64 points,
/// from the height each sample reports.
@Suite struct FitThresholdTests {
    /// A small phone, an iPhone 8, an iPhone 14 and an iPad Pro in portrait.
    @Test(arguments: [(400.0, 80.0), (667, 133.4), (844, 148), (1366, 148), (200, 64), (0, 64)])
    func theThresholdFollowsTheViewport(viewport: Double, rounded: Double) throws {
        let expected = RefreshConfig.Threshold.fit.points(viewportHeight: viewport)
        #expect(abs(expected - rounded) < 1e-9)

        let config = try Preset.standard.config.applying(.init(top: .init(threshold: .fit)))
        var driver = Driver(config: config)
        driver.move(to: -(expected - 0.5), content: 5000, viewport: viewport)
        #expect(driver.state.phase == .pulling)
        #expect(driver.engine.threshold(.top) == expected)
        // The arrow turns from 60 % of the threshold in force to 180° at it.
        #expect(driver.state.rotation > 0 && driver.state.rotation < 180)
        driver.move(to: -expected)
        #expect(driver.state.phase == .armed)
        #expect(abs(driver.state.rotation - 180) < 1e-9 && driver.state.pull == 1)
        let effects = driver.move(to: -expected, .release)
        #expect(effects.start?.kind == .refresh)
    }

    @Test(arguments: [(400.0, 80.0), (667, 133.4), (844, 148), (1366, 148)])
    func theBottomEdgeFitsToo(viewport: Double, rounded: Double) throws {
        let expected = RefreshConfig.Threshold.fit.points(viewportHeight: viewport)
        #expect(abs(expected - rounded) < 1e-9)
        let config = try Preset.uikitBottom.config.applying(.init(bottom: .init(threshold: .fit)))
        var driver = Driver(config: config)
        let maxY = 5000 - viewport
        driver.move(to: maxY + expected - 0.5, content: 5000, viewport: viewport)
        #expect(driver.state.edge == .bottom && driver.state.phase == .pulling)
        let effects = driver.move(to: maxY + expected + 0.01)
        #expect(effects.start?.kind == .loadMore)
    }

    /// Turning a phone changes the height, and the threshold with it.
    @Test func aResizeMovesTheThreshold() throws {
        let config = try Preset.standard.config.applying(.init(top: .init(threshold: .fit)))
        var driver = Driver(config: config)
        driver.move(to: -100, content: 5000, viewport: 844)
        #expect(driver.state.phase == .pulling)
        driver.move(to: -100, viewport: 400)
        #expect(driver.state.phase == .armed)
    }

    /// Until a sample says how tall the screen is, the threshold is the rule's largest.
    @Test func anUnknownViewportTakesTheLargest() throws {
        let config = try Preset.standard.config.applying(.init(top: .init(threshold: .fit)))
        var driver = Driver(config: config)
        driver.move(to: -147)
        #expect(driver.state.phase == .pulling)
        driver.move(to: -148)
        #expect(driver.state.phase == .armed)
    }

    @Test func presetsKeepTheirNumbers() {
        #expect(Preset.standard.config.top.threshold == .points(80))
        #expect(Preset.iOS15.config.top.threshold == .points(145))
        #expect(Preset.uikitBottom.config.bottom.threshold == .points(120))
    }

    @Test func itIsTheStringFitInJSON() throws {
        let config = try Preset.standard.config.applying(.init(top: .init(threshold: .fit)))
        let encoded = try JSONEncoder().encode(config)
        let fields = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        let top = try #require(fields["top"] as? [String: Any])
        #expect(top["threshold"] as? String == "fit")
        #expect(try JSONDecoder().decode(RefreshConfig.self, from: encoded) == config)
        let overrides = try JSONDecoder().decode(RefreshConfig.Overrides.self, from: Data(#"{"top": {"threshold": "fit"}}"#.utf8))
        #expect(overrides.top?.threshold == .fit)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(RefreshConfig.Overrides.self, from: Data(#"{"top": {"threshold": "far"}}"#.utf8))
        }
    }
}
