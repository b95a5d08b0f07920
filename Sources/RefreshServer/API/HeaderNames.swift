import HTTPTypes

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
    static let accelBuffering = Self("X-Accel-Buffering")!
}
