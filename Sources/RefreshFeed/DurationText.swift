extension Duration {
    /// A limit as the sentences the feed and the server write for people say it ("5 s",
    /// "0.25 s"): whole seconds when it is whole, milliseconds' precision otherwise.
    package var secondsText: String {
        let milliseconds = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
