// SPDX-License-Identifier: MIT

/// Everything `gattd --doctor` read, as plain data: the probe (module Control) fills it
/// from the bus and the files, `KnownProblems.diagnose` and `DoctorReport` read it.
/// A nil field was not found out; the matching `...Note` says why.
public struct DoctorFacts: Sendable {
    /// How bluetoothd's version was found, or why it was not.
    public struct Bluetoothd: Sendable {
        /// Whether `org.bluez` has an owner on the system bus.
        public var running: Bool
        public var pid: Int32?
        public var version: BlueZVersion?
        /// `from /usr/libexec/bluetooth/bluetoothd --version (pid 412)`, or why not.
        public var versionNote: String
        /// Its `/proc/PID/cmdline`, when readable.
        public var commandLine: [String]?

        public init(
            running: Bool, pid: Int32? = nil, version: BlueZVersion? = nil, versionNote: String,
            commandLine: [String]? = nil
        ) {
            self.running = running
            self.pid = pid
            self.version = version
            self.versionNote = versionNote
            self.commandLine = commandLine
        }
    }

    /// `LEAdvertisingManager1`'s properties (absent ones stay nil).
    public struct AdvertisingManager: Sendable, Equatable {
        /// `SupportedInstances`: the instances still free.
        public var supportedInstances: Int?
        /// `ActiveInstances`: registered by anyone.
        public var activeInstances: Int?
        public var supportedIncludes: [String]?
        public var supportedSecondaryChannels: [String]?
        /// `SupportedCapabilities` (`MaxAdvLen`, `MaxScnRspLen`, `MinTxPower`, `MaxTxPower`);
        /// nil when bluetoothd does not offer the property (5.66 without `-E`).
        public var supportedCapabilities: [String: Int]?
        public var supportedFeatures: [String]?

        public init() {}
    }

    public struct Adapter: Sendable, Equatable {
        public var name: String
        public var address: String?
        public var powered: Bool?
        public var pairable: Bool?
        public var discoverable: Bool?
        /// nil when the adapter has no `LEAdvertisingManager1`.
        public var advertising: AdvertisingManager?

        public init(name: String) { self.name = name }
    }

    /// One setting of bluetoothd's `main.conf`.
    public struct Setting: Sendable, Equatable {
        public var section: String
        public var key: String
        /// nil when the file does not set it (bluetoothd's default applies).
        public var value: String?
        /// bluetoothd's default, in words.
        public var defaultValue: String
        /// What it changes for a peripheral.
        public var effect: String

        public init(section: String, key: String, value: String?, defaultValue: String, effect: String) {
            self.section = section
            self.key = key
            self.value = value
            self.defaultValue = defaultValue
            self.effect = effect
        }
    }

    public struct MainConf: Sendable {
        public var path: String
        /// Where the path came from: `--main-conf`, bluetoothd's `-f`, or the default.
        public var origin = "default"
        /// nil when the file could not be read; `unreadableReason` says why.
        public var settings: [Setting]?
        public var unreadableReason: String?

        public init(path: String, settings: [Setting]?, unreadableReason: String? = nil) {
            self.path = path
            self.settings = settings
            self.unreadableReason = unreadableReason
        }

        /// The value set for `section`.`key` (nil when unset or unreadable).
        public func value(_ section: String, _ key: String) -> String? {
            settings?.first { $0.section == section && $0.key == key }?.value
        }
    }

    /// gattd's own state, from `org.gattd.Manager1.GetStatus`.
    public struct Gattd: Sendable {
        public var running: Bool
        /// Why the state is unknown (not running, no answer), when it is.
        public var note: String?
        public var adapter: String?
        public var registered: Bool?
        public var registration: String?
        /// Advertisement id -> state words (`advertising`, `refused: ...`).
        public var advertisements: [(id: String, state: String)]
        public var advertising: [String]
        public var lastError: String?
        /// Channels of the definition that do not listen, with why (`ListChannels`' `Error`).
        public var channelErrors: [(id: String, error: String)] = []

        public init(running: Bool, note: String? = nil) {
            self.running = running
            self.note = note
            self.advertisements = []
            self.advertising = []
        }
    }

    public var gattdVersion: String
    /// Set when the system bus itself could not be reached; nothing else was read then.
    public var busError: String?
    public var bluetoothd: Bluetoothd
    public var kernel: KernelRelease?
    public var adapters: [Adapter]
    /// Why `adapters` is empty when bluetoothd runs (the call failed), if it did.
    public var adaptersNote: String?
    public var mainConf: MainConf
    public var gattd: Gattd
    /// bluetoothd's refusals gattd reported (from its status), for matching the table.
    public var refusals: [Refusal]

    public init(
        gattdVersion: String, busError: String? = nil, bluetoothd: Bluetoothd, kernel: KernelRelease?,
        adapters: [Adapter], adaptersNote: String? = nil, mainConf: MainConf, gattd: Gattd, refusals: [Refusal] = []
    ) {
        self.gattdVersion = gattdVersion
        self.busError = busError
        self.bluetoothd = bluetoothd
        self.kernel = kernel
        self.adapters = adapters
        self.adaptersNote = adaptersNote
        self.mainConf = mainConf
        self.gattd = gattd
        self.refusals = refusals
    }
}
