// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

/// An `org.bluez.LEAdvertisement1` object at `/org/gattd/adv/<id>`.
///
/// Properties come from the one table `AdvertisementDefinition.leProperties`; unset ones
/// are omitted. `Release()` (sent by bluetoothd with NO_REPLY when the advertisement's
/// `Timeout` expires or its adapter goes away) is passed to `onRelease` only when it
/// comes from the current `org.bluez` owner (the session's).
final class ExportedAdvertisement: DBusObject {
    static let interface = DBusInterface(
        name: BlueZNames.advertisement,
        methods: [DBusMethod("Release") { (advertisement: ExportedAdvertisement, call) in advertisement.release(call) }],
        properties: AdvertisementDefinition.leProperties.map(\.declaration))

    let path: ObjectPath
    var definition: AdvertisementDefinition {
        didSet { properties = definition.leAdvertisementProperties }
    }
    private(set) var properties: [(String, DBusValue)]
    /// Knows the current `org.bluez` owner, the only caller of `Release` trusted.
    private unowned let session: BlueZSession
    var onRelease: (() -> Void)?

    let interfaces = [ExportedAdvertisement.interface]

    init(path: ObjectPath, definition: AdvertisementDefinition, session: BlueZSession) {
        self.path = path
        self.session = session
        self.definition = definition
        self.properties = definition.leAdvertisementProperties
    }

    func property(_ name: String, interface: String) -> DBusValue? {
        properties.first { $0.0 == name }?.1
    }

    private func release(_ call: MethodCall) {
        guard let owner = session.owner, call.sender == owner else {
            call.fail(.accessDenied("Release is accepted from org.bluez only"))
            return
        }
        call.reply()
        onRelease?()
    }
}
