#if canImport(SwiftUI)
import RefreshEngine
import SwiftUI

@available(iOS 18, macOS 15, tvOS 18, visionOS 2, *)
extension View {
    /// Posts this scroll view's offsets to `session`, from `onScrollGeometryChange` and
    /// `onScrollPhaseChange`: a drag while a finger is on the list, the release when it lifts,
    /// momentum after. Draw what the session's ``RemoteSession/events`` say. Until the
    /// session exists (`nil`), nothing is posted.
    public func samplingScroll(into session: RemoteSession?) -> some View {
        modifier(ScrollSampling(session: session))
    }
}

@available(iOS 18, macOS 15, tvOS 18, visionOS 2, *)
struct ScrollSampling: ViewModifier {
    let session: RemoteSession?
    @State private var sampler = ScrollSampler()
    @State private var feed: SampleFeed?
    @State private var dragging = false

    func body(content: Content) -> some View {
        content
            .onScrollPhaseChange { _, phase, context in
                dragging = phase == .tracking || phase == .interacting
                post(context.geometry)
            }
            .onScrollGeometryChange(for: ScrollGeometry.self, of: { $0 }) { _, geometry in
                post(geometry)
            }
            .task(id: session.map { ObjectIdentifier($0) }) {
                feed = session.map { SampleFeed(session: $0) }
            }
    }

    private func post(_ geometry: ScrollGeometry) {
        let insets = geometry.contentInsets
        sampler.topInset = Double(insets.top)
        feed?.post(
            sampler.scrolled(
                offset: Double(geometry.contentOffset.y), contentHeight: Double(geometry.contentSize.height),
                viewportHeight: Double(geometry.containerSize.height - insets.top - insets.bottom), isDragging: dragging
            )
        )
    }
}
#endif
