/// The configurations of the implementations this project grew from, each with its numbers kept.
public enum Preset: String, Sendable, Codable, CaseIterable {
    /// Web convention: release to refresh at 80, pull up and release at 120 to load more,
    /// and infinite scroll.
    case standard = "default"
    /// swiftui-lab's refreshable scroll view: triggers on crossing 80, holds the indicator
    /// at the threshold (its `frozen` state).
    case swiftUILab = "swiftui-lab"
    /// The iOS 15 `refreshable` seed: triggers on crossing 145 measured from the first
    /// offset seen, holds 44, no arrow rotation.
    case iOS15 = "ios15"
    /// The UIKit load-more seed: only the bottom edge, triggering on crossing 120.
    case uikitBottom = "uikit-bottom"

    public var config: RefreshConfig {
        switch self {
        case .standard:
            RefreshConfig(
                top: .init(enabled: true, threshold: 80, trigger: .release, heldOffset: 50, labels: .top),
                bottom: .init(enabled: true, threshold: 120, trigger: .release, heldOffset: 50, labels: .bottom),
                rotation: true, prefetch: true)
        case .swiftUILab:
            RefreshConfig(
                top: .init(enabled: true, threshold: 80, trigger: .cross, heldOffset: 80, labels: .top),
                bottom: .init(enabled: false, threshold: 120, trigger: .cross, heldOffset: 50, labels: .bottom),
                rotation: true, prefetch: false)
        case .iOS15:
            RefreshConfig(
                top: .init(enabled: true, threshold: 145, trigger: .cross, heldOffset: 44, indicatorHeight: 44, labels: .top),
                bottom: .init(enabled: false, threshold: 120, trigger: .cross, heldOffset: 50, labels: .bottom),
                rotation: false, prefetch: false, baseline: .firstSample)
        case .uikitBottom:
            RefreshConfig(
                top: .init(enabled: false, threshold: 80, trigger: .cross, heldOffset: 50, labels: .top),
                bottom: .init(enabled: true, threshold: 120, trigger: .cross, heldOffset: 50, labels: .bottom),
                rotation: false, prefetch: false)
        }
    }
}
