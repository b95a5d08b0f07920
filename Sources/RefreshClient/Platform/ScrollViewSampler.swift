#if canImport(UIKit)
import RefreshEngine
import UIKit

/// Posts a `UIScrollView`'s offsets to a session: call it from the scroll view delegate's
/// methods of the same names, and draw what the session's ``RemoteSession/events`` say.
///
/// The offset is `contentOffset.y` with `adjustedContentInset.top` added, so `0` is the rest
/// position under any navigation bar; the viewport is what the insets leave of the bounds, so
/// the end of the list is where the engine expects it.
@MainActor
public final class ScrollViewSampler {
    private var sampler = ScrollSampler()
    private let feed: SampleFeed

    public init(session: RemoteSession) {
        feed = SampleFeed(session: session)
    }

    public func scrollViewDidScroll(_ scrollView: UIScrollView) {
        let geometry = Geometry(scrollView)
        sampler.topInset = geometry.topInset
        feed.post(
            sampler.scrolled(
                offset: geometry.offset, contentHeight: geometry.contentHeight, viewportHeight: geometry.viewportHeight,
                isDragging: scrollView.isTracking
            )
        )
    }

    /// The finger lifts: the release, at the offset it let go at.
    public func scrollViewWillEndDragging(_ scrollView: UIScrollView) {
        let geometry = Geometry(scrollView)
        sampler.topInset = geometry.topInset
        feed.post(sampler.released(offset: geometry.offset, contentHeight: geometry.contentHeight, viewportHeight: geometry.viewportHeight))
    }

    /// The same, for a drag that ends without `scrollViewWillEndDragging` (it is not called
    /// when paging is on); a release already sampled is not sampled twice.
    public func scrollViewDidEndDragging(_ scrollView: UIScrollView) {
        scrollViewWillEndDragging(scrollView)
    }

    @MainActor
    private struct Geometry {
        var offset: Double
        var topInset: Double
        var contentHeight: Double
        var viewportHeight: Double

        init(_ scrollView: UIScrollView) {
            let insets = scrollView.adjustedContentInset
            offset = Double(scrollView.contentOffset.y)
            topInset = Double(insets.top)
            contentHeight = Double(scrollView.contentSize.height)
            viewportHeight = Double(scrollView.bounds.height - insets.top - insets.bottom)
        }
    }
}
#endif
