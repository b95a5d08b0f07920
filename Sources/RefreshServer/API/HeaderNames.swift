import HTTPTypes

extension HTTPField.Name {
    static let accelBuffering = Self("X-Accel-Buffering")!
    static let xRequestID = Self("X-Request-ID")!
}
