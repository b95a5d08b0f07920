/// A few items so a first start does not show an empty list.
public enum DemoItems {
    public static func make(now: Timestamp = .now()) -> [FeedItem] {
        let entries: [(String, String)] = [
            ("Pull down to refresh", "Drag the list down past the arrow's turn and let go: the server decides when it counts."),
            (
                "Swift decides, the browser draws",
                "Every offset is posted to the server, which answers with the state to draw over server-sent events."
            ),
            ("Try the keyboard", "Tab to the Refresh button and press Enter, or load older items with the button at the end."),
            ("Publish an item", "POST /api/items with a title, then pull to refresh to see it arrive."),
            ("Infinite scroll", "Scroll near the end and older items load before you get there."),
            ("Presets", "default, swiftui-lab, ios15 and uikit-bottom keep the numbers of the implementations they come from."),
            ("Held indicator", "While a refresh runs the spinner stays in view, even after you let go."),
            ("Reconnects", "Lose the network and the event stream resumes where it stopped, missing nothing."),
        ]
        var items: [FeedItem] = []
        for round in 0..<5 {
            for (offset, entry) in entries.enumerated() {
                let index = round * entries.count + offset
                items.append(
                    FeedItem(
                        id: "demo-\(index + 1)",
                        title: round == 0 ? entry.0 : "\(entry.0) (\(round + 1))",
                        summary: entry.1,
                        author: "swift-pull-to-refresh",
                        published: Timestamp(milliseconds: now.milliseconds - Int64(index + 1) * 3_600_000)))
            }
        }
        return items
    }
}
