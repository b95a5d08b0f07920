import Foundation
import Testing

@testable import RefreshEngine

/// Pins every number of the presets table; each row also has behaviour tests elsewhere.
@Suite struct PresetTests {
    @Test func defaultPreset() throws {
        let config = Preset.standard.config
        #expect(Preset(rawValue: "default") == .standard)
        #expect(config.top.enabled && config.top.threshold == 80 && config.top.trigger == .release)
        #expect(config.top.heldOffset == 50)
        #expect(config.bottom.enabled && config.bottom.threshold == 120 && config.bottom.trigger == .release)
        #expect(config.bottom.heldOffset == 50)
        #expect(config.prefetch && config.rotation && config.baseline == .zero)
    }

    @Test func swiftUILabPreset() {
        let config = Preset.swiftUILab.config
        #expect(Preset(rawValue: "swiftui-lab") == .swiftUILab)
        #expect(config.top.enabled && config.top.threshold == 80 && config.top.trigger == .cross)
        #expect(config.top.threshold == .points(config.top.heldOffset))
        #expect(!config.bottom.enabled && !config.prefetch)
        #expect(config.rotation && config.baseline == .zero)
    }

    @Test func iOS15Preset() {
        let config = Preset.iOS15.config
        #expect(Preset(rawValue: "ios15") == .iOS15)
        #expect(config.top.enabled && config.top.threshold == 145 && config.top.trigger == .cross)
        #expect(config.top.heldOffset == 44)
        #expect(!config.bottom.enabled && !config.prefetch)
        #expect(!config.rotation && config.baseline == .firstSample)
    }

    @Test func uikitBottomPreset() {
        let config = Preset.uikitBottom.config
        #expect(Preset(rawValue: "uikit-bottom") == .uikitBottom)
        #expect(!config.top.enabled)
        #expect(config.bottom.enabled && config.bottom.threshold == 120 && config.bottom.trigger == .cross)
        #expect(config.bottom.heldOffset == 50 && config.bottom.indicatorHeight == 50)
        #expect(!config.prefetch)
    }

    @Test(arguments: Preset.allCases)
    func everyPresetIsValid(preset: Preset) throws {
        try preset.config.validate()
    }

    /// The page's resistance must let a 150-point drag arm the default top edge and keep a
    /// 40-point drag under it.
    @Test func rubberBandLetsAFullDragArm() {
        let config = Preset.standard.config
        let threshold = config.top.threshold.points(viewportHeight: nil)
        #expect(config.rubberBand.displayed(travel: 150) >= threshold)
        #expect(config.rubberBand.displayed(travel: 40) < threshold)
        #expect(config.rubberBand.displayed(travel: 0) == 0)
        #expect(config.rubberBand.displayed(travel: -10) == 0)
        #expect(config.rubberBand.displayed(travel: 1_000_000) < config.rubberBand.maxPull)
    }
}

@Suite struct ConfigTests {
    @Test func aConfigStoredBeforeNewsExistedDecodesWithTheBadge() throws {
        let config = try Preset.standard.config.applying(.init(news: .live))
        let encoded = try JSONEncoder().encode(config)
        #expect(try JSONDecoder().decode(RefreshConfig.self, from: encoded) == config)
        var fields = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        fields["news"] = nil
        let older = try JSONDecoder().decode(RefreshConfig.self, from: try JSONSerialization.data(withJSONObject: fields))
        #expect(older.news == .badge)
        #expect(older.top == config.top)
    }

    @Test func overridesReplaceOnlyTheFieldsGiven() throws {
        let overrides = RefreshConfig.Overrides(
            top: .init(threshold: 100, labels: .init(pull: "Tirer")), prefetch: false, rubberBand: .init(maxPull: 500))
        let config = try Preset.standard.config.applying(overrides)
        #expect(config.top.threshold == 100)
        #expect(config.top.labels.pull == "Tirer")
        #expect(config.top.labels.release == "Release to refresh")
        #expect(config.top.heldOffset == 50)
        #expect(config.top.trigger == .release)
        #expect(!config.prefetch)
        #expect(config.rubberBand.maxPull == 500)
        #expect(config.rubberBand.coefficient == 1)
        #expect(config.bottom == Preset.standard.config.bottom)
    }

    @Test func everyOverrideFieldApplies() throws {
        let overrides = RefreshConfig.Overrides(
            top: .init(
                enabled: false, threshold: 90, trigger: .cross, heldOffset: 60, indicatorHeight: 40,
                labels: .init(pull: "a", release: "b", active: "c")),
            bottom: .init(enabled: false), rotation: false, prefetch: false, prefetchDistance: 10,
            baseline: .firstSample, rubberBand: .init(coefficient: 0.55, maxPull: 300))
        let config = try Preset.standard.config.applying(overrides)
        #expect(
            config.top
                == .init(
                    enabled: false, threshold: 90, trigger: .cross, heldOffset: 60, indicatorHeight: 40,
                    labels: .init(pull: "a", release: "b", active: "c")))
        #expect(!config.bottom.enabled && !config.rotation && !config.prefetch)
        #expect(config.prefetchDistance == 10 && config.baseline == .firstSample)
        #expect(config.rubberBand == .init(coefficient: 0.55, maxPull: 300))
    }

    @Test(arguments: [
        (RefreshConfig.Overrides(top: .init(threshold: -1)), "top.threshold"),
        (RefreshConfig.Overrides(top: .init(threshold: 0)), "top.threshold"),
        (RefreshConfig.Overrides(top: .init(threshold: .points(.leastNonzeroMagnitude))), "top.threshold"),
        (RefreshConfig.Overrides(bottom: .init(threshold: 0.5)), "bottom.threshold"),
        (RefreshConfig.Overrides(top: .init(threshold: .points(.nan))), "top.threshold"),
        (RefreshConfig.Overrides(bottom: .init(threshold: .points(.infinity))), "bottom.threshold"),
        (RefreshConfig.Overrides(top: .init(threshold: 400)), "top.threshold"),
        (RefreshConfig.Overrides(top: .init(heldOffset: 401)), "top.heldOffset"),
        (RefreshConfig.Overrides(top: .init(heldOffset: 0)), "top.heldOffset"),
        (RefreshConfig.Overrides(bottom: .init(indicatorHeight: -5)), "bottom.indicatorHeight"),
        (RefreshConfig.Overrides(top: .init(labels: .init(active: String(repeating: "x", count: 201)))), "top.labels.active"),
        // One character of 10,001 scalars: the limit counts code points, not characters.
        (RefreshConfig.Overrides(bottom: .init(labels: .init(pull: "e" + String(repeating: "\u{301}", count: 10_000)))), "bottom.labels.pull"),
        (RefreshConfig.Overrides(top: .init(labels: .init(release: String(repeating: "e\u{301}", count: 101)))), "top.labels.release"),
        (RefreshConfig.Overrides(prefetchDistance: -1), "prefetchDistance"),
        (RefreshConfig.Overrides(rubberBand: .init(maxPull: 0)), "rubberBand.maxPull"),
        (RefreshConfig.Overrides(rubberBand: .init(coefficient: .nan)), "rubberBand.coefficient"),
        (RefreshConfig.Overrides(rubberBand: .init(maxPull: 60)), "top.threshold"),
        // A `fit` threshold reaches 148 on a tall screen: a pull must be able to go past it.
        (RefreshConfig.Overrides(top: .init(threshold: .fit), rubberBand: .init(maxPull: 148)), "top.threshold"),
    ])
    func invalidConfigsAreRejectedWithTheirField(overrides: RefreshConfig.Overrides, field: String) {
        #expect(throws: ConfigError.self) { try Preset.standard.config.applying(overrides) }
        do {
            _ = try Preset.standard.config.applying(overrides)
        } catch {
            #expect(error.field == field)
            #expect(!error.description.isEmpty)
        }
    }

    @Test func aThresholdOfOnePointIsTheSmallestAndItsArrowTurnsByNumbers() throws {
        let config = try Preset.standard.config.applying(.init(top: .init(threshold: 1)))
        var engine = RefreshEngine(config: config)
        let effects = try engine.samplesReceived([Sample(seq: 1, y: -0.8)])
        let state = try #require(effects.state)
        #expect(state.rotation.isFinite && (0...180).contains(state.rotation))
        #expect(state.pull == 0.8)
    }

    /// The engine embedded without validation: a subnormal threshold (which ``RefreshConfig/validate()``
    /// refuses) still turns the arrow by a number, not NaN.
    @Test(arguments: [0.0, .leastNonzeroMagnitude, .leastNonzeroMagnitude * 2000])
    func theArrowTurnsByANumberWhateverTheThreshold(threshold: Double) {
        for distance in [0.0, .leastNonzeroMagnitude, 1, 100] {
            let rotation = arrowRotation(distance: distance, threshold: threshold)
            #expect(rotation.isFinite && (0...180).contains(rotation), "distance \(distance): \(rotation)")
        }
    }

    @Test func heldLargerThanMaxPullNamesTheReason() {
        do {
            _ = try Preset.swiftUILab.config.applying(.init(top: .init(heldOffset: 500)))
            Issue.record("accepted a held offset beyond the largest pull")
        } catch {
            #expect(error.field == "top.heldOffset")
            #expect(error.reason.contains("maxPull"))
        }
    }
}
