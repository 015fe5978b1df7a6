// swift-tools-version:6.0
// SPDX-License-Identifier: MIT
//
// gattd: a Bluetooth LE peripheral daemon for Linux (BlueZ over libdbus-1).
//
// Which module imports which, and what each owns: docs/architecture.md ("Modules"), whose
// graph is drawn from the imports and checked by `scripts/check-architecture` (make check),
// which also refuses the edges that must not come back (gattctl linking the daemon's
// modules, libdbus outside DBusKit).

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "gattd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "gattd", targets: ["gattd"]),
        .executable(name: "gattctl", targets: ["gattctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(name: "CLinux"),
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(name: "SystemCalls", dependencies: ["CLinux"], swiftSettings: strict),
        .target(name: "Mainloop", dependencies: ["CLinux", "SystemCalls"], swiftSettings: strict),
        .target(name: "DBusKit", dependencies: ["CDBus", "Mainloop"], swiftSettings: strict),
        .target(name: "BLEModel", swiftSettings: strict),
        .target(
            name: "DaemonCore",
            dependencies: [
                "BLEModel", "Mainloop", "CLinux", "SystemCalls", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "BlueZ",
            dependencies: [
                "DBusKit", "BLEModel", "DaemonCore", "Mainloop", "SystemCalls",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(name: "ControlAPI", dependencies: ["DBusKit"], swiftSettings: strict),
        .target(
            name: "Control",
            dependencies: [
                "ControlAPI", "DBusKit", "BLEModel", "DaemonCore", "BlueZ",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Doctor",
            dependencies: ["BLEModel", "ControlAPI", "DBusKit", "DaemonCore", "Mainloop", "SystemCalls"],
            swiftSettings: strict
        ),
        .target(
            name: "SystemdKit",
            dependencies: ["CSystemd", "SystemCalls", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "gattd",
            dependencies: [
                "BlueZ", "Control", "ControlAPI", "DaemonCore", "BLEModel", "DBusKit", "Doctor", "Mainloop",
                "SystemCalls", "SystemdKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "gattctl",
            dependencies: [
                "ControlAPI", "DBusKit", "BLEModel", "Mainloop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "DaemonCore", .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "BLEModelTests",
            dependencies: ["BLEModel"],
            exclude: ["Fixtures", "check_schema.py"],
            swiftSettings: strict
        ),
        .testTarget(name: "MainloopTests", dependencies: ["Mainloop"], swiftSettings: strict),
        .testTarget(
            name: "DBusKitTests",
            dependencies: ["DBusKit", "Mainloop", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DaemonCoreTests",
            dependencies: [
                "DaemonCore", "BLEModel", "Mainloop", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BlueZTests",
            dependencies: [
                "BlueZ", "BLEModel", "DBusKit", "DaemonCore", "Mainloop", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ControlTests",
            dependencies: [
                "Control", "ControlAPI", "BlueZ", "BLEModel", "DBusKit", "DaemonCore", "Mainloop", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoctorTests",
            dependencies: ["Doctor", "BLEModel", "ControlAPI", "DBusKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SystemdKitTests",
            dependencies: ["SystemdKit", "TestSupport"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Fuzz targets (libFuzzer), declared only when GATTD_FUZZ is set so that `swift build` and
// `swift test` never build them: `make fuzz` / `make fuzz-smoke` (Fuzz/README.md) set it
// and build with `-sanitize=fuzzer,address` into .build-fuzz.
if Context.environment["GATTD_FUZZ"] != nil {
    func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(
            name: name, dependencies: ["FuzzSupport"] + dependencies, path: "Fuzz/Sources/\(name)",
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])])
    }
    package.targets += [
        .target(name: "FuzzSupport", path: "Fuzz/Sources/FuzzSupport", swiftSettings: strict),
        fuzzTarget("FuzzConfiguration", ["BLEModel"]),
        fuzzTarget("FuzzStateFile", ["DaemonCore", "BLEModel", .product(name: "Logging", package: "swift-log")]),
        fuzzTarget("FuzzDBusMessage", ["DBusKit", "BlueZ", "ControlAPI", "CDBus"]),
    ]
}
