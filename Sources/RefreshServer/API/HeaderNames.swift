import HTTPTypes

extension HTTPField.Name {
    static let accelBuffering = Self("X-Accel-Buffering")!
}
